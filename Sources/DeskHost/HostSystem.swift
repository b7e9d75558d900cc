import DeskCore
import DeskLinux
import Glibc

/// Everything deskd asks of the host, in the daemon's own words: accounts, displays, a
/// session's files, its cgroup, its processes and its endpoint.
///
/// `LinuxHost` is the real one. The daemon's unit tests use a fake, so allocation, limits,
/// re-adoption, teardown order and the audit trail are tested without root or Xvnc.
///
/// Every method may block (on /proc, on a user's files, on a socket): the daemon calls them
/// off its actors (`onDedicatedThread`) wherever the answer can be slow.
public protocol HostSystem: Sendable {
    // MARK: Accounts

    func account(named name: String) -> UserAccount?
    func account(uid: uid_t) -> UserAccount?
    func groupID(named name: String) -> gid_t?

    // MARK: Displays

    /// What occupies each display of `range`: listeners are looked at once, lock files lazily.
    func displayOccupancy(in range: ClosedRange<Int>, rfbPortBase: Int?) -> @Sendable (Display) -> DisplayOccupancy
    /// Memory available for new work (MemAvailable), in bytes; nil if the kernel does not say.
    func memoryAvailable() -> Int?
    /// Removes a dead X server's lock, which Xvnc (running as the user) could not.
    func reclaimStaleLock(_ display: Display)
    /// A stale lock of `uid`'s on `display` (Xwayland's, which a compositor of theirs chose), removed.
    func reclaimStaleLock(_ display: Display, ownedBy uid: uid_t)
    /// Removes the lock only while it still names `pid`.
    func releaseLock(_ display: Display, ownedBy pid: pid_t)
    /// Makes /tmp/.X11-unix as X servers need it.
    func prepareXSocketDirectory() throws(OSError)
    func isExecutable(_ path: String) -> Bool
    /// Whether `path` is a directory (followed as the account database names it: a user's home).
    func isDirectory(_ path: String) -> Bool
    /// A regular file is there (a desktop's X11 session file, /usr/share/xsessions/NAME.desktop).
    func isFile(_ path: String) -> Bool

    // MARK: Files

    func createSessionDirectory(_ directory: SessionDirectory, owner: uid_t, group: gid_t, contents: SessionDirectory.Contents) throws(OSError)
    func readPassword(of directory: SessionDirectory) -> [UInt8]?
    func replacePassword(of directory: SessionDirectory, with bytes: [UInt8], owner: uid_t, group: gid_t) throws(OSError)
    /// Removes a session directory and everything in it, following no link.
    func removeSessionDirectory(_ directory: SessionDirectory)
    func publish(_ display: Display, sessionID: String, in directories: SessionDirectories) throws(OSError)
    func unpublish(_ display: Display, sessionID: String, in directories: SessionDirectories)
    /// A root-controlled file (a configured certificate), whole, up to `limit` bytes.
    func readRootFile(_ path: String, limit: Int) -> [UInt8]?
    /// The last lines of a log the user's programs wrote.
    func tail(of log: String, lines: Int) -> [String]

    // MARK: Cgroups

    /// The limit controllers (of "pids", "memory") deskd may set; nil without a writable cgroup v2 tree.
    func delegatedControllers() -> Set<String>?
    /// A new cgroup for session `id`, limited as asked; nil where cgroups are not available.
    func createCGroup(for id: String, tasks: Int?, memoryBytes: Int?) throws(OSError) -> SessionCGroup?
    /// Where `createCGroup` puts the cgroup of session `id`: the only path deskd takes back for
    /// it from a record. nil without a writable cgroup v2 hierarchy.
    func cgroupPath(for id: String) -> String?
    func removeCGroup(_ cgroup: SessionCGroup)

    // MARK: Processes

    /// deskd-session, if installed.
    var sessionHelperPath: String? { get }
    /// Starts deskd-session, which opens the PAM login and starts Xvnc; see Sources/deskd-session.
    func startLogin(_ spec: SessionHelper.Spec, helper: String, stderr: Int32) throws(OSError) -> any LoginProcess
    /// Waits until the session's own Xvnc completes an RFB greeting on `endpoint`.
    func awaitRFB(_ endpoint: RFBEndpoint, host: String, xvnc: pid_t, until deadline: ContinuousClock.Instant) -> RFBReadiness
    /// A real RFB session up to a framebuffer update with `password`; with `authenticate` off
    /// (TLS with a certificate only), the server's greeting alone.
    func probe(_ endpoint: RFBEndpoint, host: String, xvnc: pid_t, authenticate: Bool, password: String?, timeout: Duration) -> Result<RFBProbe, RFBClient.Failure>
    /// Who a pid is now; nil once it is gone or a zombie.
    func identity(of pid: pid_t) -> ProcessIdentity?
    /// When `pid` started (in clock ticks), or nil once it has ended: what a wait on a process
    /// needs, without identity's uid and executable.
    func startTicks(of pid: pid_t) -> UInt64?
    /// Every live process of a session: its cgroup's, or (without one) those marked with its id.
    func processes(of session: Session, cgroup: SessionCGroup?) -> [pid_t]
    /// The same for many sessions at once, by session id: what a kill of many signals first.
    func processes(of sessions: [(Session, SessionCGroup?)]) -> [String: [pid_t]]
    func signal(_ pid: pid_t, _ signal: Int32)
    /// SIGKILL to every process of the cgroup at once; false if the cgroup is gone.
    func killAll(in cgroup: SessionCGroup) -> Bool
    /// Calls `handler` once `pid`, a child of deskd's or not, has ended (and reaps a child).
    func onExit(of pid: pid_t, _ handler: @escaping @Sendable () -> Void)
    /// The session's processes (those of its cgroup; without one, the desktop alone) that hold
    /// a connection to `xvnc`'s X display: the sign that the desktop got as far as its display.
    /// nil when the kernel could not be asked (see XClients).
    func desktopClients(server: pid_t, socket: DisplayClientSocket, cgroup: SessionCGroup?, desktop: pid_t?) -> [pid_t]?
    /// Viewers per session id, from the kernel's socket tables.
    /// `health`: Xvnc's state too (see `ViewerCensus.take`).
    func viewerCensus(_ subjects: [ViewerCensus.Subject], socketDirectory: String, health: Bool) -> [String: ViewerCensus.Count]
}

extension HostSystem {
    public func startTicks(of pid: pid_t) -> UInt64? { identity(of: pid)?.startTicks }

    public func processes(of sessions: [(Session, SessionCGroup?)]) -> [String: [pid_t]] {
        var found: [String: [pid_t]] = [:]
        for (session, cgroup) in sessions { found[session.id] = processes(of: session, cgroup: cgroup) }
        return found
    }

    /// A session's recorded Xvnc is still that process: same pid, start time, uid and executable.
    public func isSameProcess(_ session: Session) -> Bool {
        guard let now = identity(of: session.pid) else { return false }
        return now.startTicks == session.pidStartTicks && now.uid == session.uid && now.executable == session.executable
    }
}
