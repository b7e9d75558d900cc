import DeskCore
import DeskLinux
import Glibc

/// The host deskd runs on: /proc, the account database, cgroup v2, deskd-session and real sockets.
public final class LinuxHost: HostSystem {
    private let cgroupBase: String?
    private let exitMonitor = ExitMonitor()
    public let sessionHelperPath: String?

    public init() {
        self.cgroupBase = SessionCGroup.defaultBase()
        self.sessionHelperPath = SessionHelper.locate()
    }

    // MARK: Accounts

    public func account(named name: String) -> UserAccount? { UserAccount.named(name) }
    public func account(uid: uid_t) -> UserAccount? { UserAccount.withUID(uid) }
    public func groupID(named name: String) -> gid_t? { GroupDirectory.gid(named: name) }

    // MARK: Displays

    public func displayOccupancy(in range: ClosedRange<Int>, rfbPortBase: Int?) -> @Sendable (Display) -> DisplayOccupancy {
        let snapshot = DisplaySnapshot.take(displays: range, rfbPortBase: rfbPortBase)
        return { snapshot.occupancy(of: $0) }
    }

    public func memoryAvailable() -> Int? { ProcFS.memoryAvailableBytes() }

    public func reclaimStaleLock(_ display: Display) { XLockFile.reclaim(display) }
    public func reclaimStaleLock(_ display: Display, ownedBy uid: uid_t) { XLockFile.reclaim(display, ownedBy: uid) }
    public func releaseLock(_ display: Display, ownedBy pid: pid_t) { XLockFile.release(display, ownedBy: pid) }
    public func prepareXSocketDirectory() throws(OSError) { try XSocketDirectory.ensure() }
    public func isExecutable(_ path: String) -> Bool { access(path, X_OK) == 0 }
    public func isFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    public func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    // MARK: Files

    public func createSessionDirectory(_ directory: SessionDirectory, owner: uid_t, group: gid_t, contents: SessionDirectory.Contents) throws(OSError) {
        try directory.create(owner: owner, group: group, contents: contents)
    }

    public func readPassword(of directory: SessionDirectory) -> [UInt8]? { directory.readPasswordFile() }

    public func replacePassword(of directory: SessionDirectory, with bytes: [UInt8], owner: uid_t, group: gid_t) throws(OSError) {
        try directory.replacePassword(bytes, owner: owner, group: group)
    }

    public func removeSessionDirectory(_ directory: SessionDirectory) { directory.remove() }

    public func publish(_ display: Display, sessionID: String, in directories: SessionDirectories) throws(OSError) {
        try directories.publish(display, sessionID: sessionID)
    }

    public func unpublish(_ display: Display, sessionID: String, in directories: SessionDirectories) {
        directories.unpublish(display, sessionID: sessionID)
    }

    public func readRootFile(_ path: String, limit: Int) -> [UInt8]? { ProcFS.read(path, limit: limit) }
    public func tail(of log: String, lines: Int) -> [String] { SessionDirectory.tail(of: log, lines: lines) }

    // MARK: Cgroups

    public func delegatedControllers() -> Set<String>? {
        cgroupBase.map(SessionCGroup.enableLimitControllers(base:))
    }

    public func createCGroup(for id: String, tasks: Int?, memoryBytes: Int?) throws(OSError) -> SessionCGroup? {
        guard let cgroupBase else { return nil }
        let cgroup = try SessionCGroup.create(base: cgroupBase, name: id)
        cgroup.limit(tasks: tasks, memoryBytes: memoryBytes)
        return cgroup
    }

    public func removeCGroup(_ cgroup: SessionCGroup) { cgroup.remove() }

    public func cgroupPath(for id: String) -> String? {
        cgroupBase.map { SessionCGroup.path(base: $0, name: id) }
    }

    // MARK: Processes

    public func startLogin(_ spec: SessionHelper.Spec, helper: String, stderr: Int32) throws(OSError) -> any LoginProcess {
        try SessionHelper.start(spec, helper: helper, stderr: stderr)
    }

    /// Polled every half millisecond, so the answer is not late by a scheduler tick; the kernel
    /// must name `xvnc` as the server before its greeting counts.
    public func awaitRFB(_ endpoint: RFBEndpoint, host: String, xvnc: pid_t, until deadline: ContinuousClock.Instant) -> RFBReadiness {
        RFBReadiness.awaitAnswer(endpoint, host: host, xvnc: xvnc, until: deadline, attemptMilliseconds: 500,
                                 serverRuns: { ProcFS.isAlive(xvnc) }, pause: { usleep(500) })
    }

    public func probe(_ endpoint: RFBEndpoint, host: String, xvnc: pid_t, authenticate: Bool, password: String?,
                      timeout: Duration) -> Result<RFBProbe, RFBClient.Failure> {
        let start = ContinuousClock.now
        do {
            let client = try RFBClient.connect(endpoint, host: host, xvnc: xvnc, timeout: timeout)
            let greeting = try client.greet()
            // "RFB 003.008\n" reads as 3.8.
            let version = greeting.version.dropFirst(4).split(separator: ".").compactMap { Int($0) }.map(String.init).joined(separator: ".")
            guard authenticate else { return .success(RFBProbe(protocolVersion: version, roundTrip: .now - start)) }
            try client.authenticate(greeting, password: password)
            let server = try client.initialise()
            try client.refreshOnePixel(server)
            return .success(RFBProbe(protocolVersion: version, desktopName: server.desktopName, width: server.width,
                                     height: server.height, roundTrip: .now - start))
        } catch {
            return .failure(error)
        }
    }

    public func identity(of pid: pid_t) -> ProcessIdentity? {
        guard pid > 0, let process = ProcFS.process(pid), process.state != "Z" else { return nil }
        return ProcessIdentity(startTicks: process.startTicks, uid: ProcFS.uid(of: pid), executable: ProcFS.executable(of: pid))
    }

    /// One read of /proc/PID/stat: a teardown's wait asks this of every process it follows, every
    /// few milliseconds, while two hundred desktops end around it.
    public func startTicks(of pid: pid_t) -> UInt64? {
        guard pid > 0, let process = ProcFS.process(pid), process.state != "Z" else { return nil }
        return process.startTicks
    }

    public func processes(of session: Session, cgroup: SessionCGroup?) -> [pid_t] {
        if let cgroup, cgroup.exists { return cgroup.pids }
        var pids = ProcessSweep.pids(uid: session.uid, sessionID: session.id)
        if isSameProcess(session), !pids.contains(session.pid) { pids.append(session.pid) }
        return pids
    }

    /// One walk of /proc for every session without a cgroup, rather than one each.
    public func processes(of sessions: [(Session, SessionCGroup?)]) -> [String: [pid_t]] {
        var found: [String: [pid_t]] = [:]
        var swept: [Session] = []
        for (session, cgroup) in sessions {
            if let cgroup, cgroup.exists { found[session.id] = cgroup.pids } else { swept.append(session) }
        }
        guard !swept.isEmpty else { return found }
        let bySession = ProcessSweep.pids(uids: Set(swept.map(\.uid)), sessionIDs: Set(swept.map(\.id)))
        for session in swept {
            var pids = bySession[session.id] ?? []
            if isSameProcess(session), !pids.contains(session.pid) { pids.append(session.pid) }
            found[session.id] = pids
        }
        return found
    }

    public func signal(_ pid: pid_t, _ signal: Int32) {
        guard pid > 0 else { return }
        kill(pid, signal)
    }

    public func killAll(in cgroup: SessionCGroup) -> Bool {
        guard cgroup.exists else { return false }
        cgroup.killAll()
        return true
    }

    public func onExit(of pid: pid_t, _ handler: @escaping @Sendable () -> Void) {
        exitMonitor.watch(pid, onExit: handler)
    }

    public func desktopClients(server: pid_t, socket: DisplayClientSocket, cgroup: SessionCGroup?, desktop: pid_t?) -> [pid_t]? {
        let candidates: [pid_t] = if let cgroup, cgroup.exists { cgroup.pids } else { desktop.map { [$0] } ?? [] }
        return XClients.holders(among: candidates, server: server, socket: socket)
    }

    public func viewerCensus(_ subjects: [ViewerCensus.Subject], socketDirectory: String, health: Bool) -> [String: ViewerCensus.Count] {
        ViewerCensus.take(subjects, socketDirectory: socketDirectory, health: health)
    }
}
