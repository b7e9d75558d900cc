import DeskCore
import DeskHost
import DeskLinux
import DeskSessionProtocol
import Glibc
import Synchronization

/// A host in memory, for testing the daemon's decisions without root, Xvnc or /proc.
///
/// Accounts, occupied displays and how starts go are set up by the test; every action the
/// daemon takes on the host is appended to `events`, so a test can check what happened and in
/// what order. Processes are pids in a table: a signal ends them unless they are `stubborn`.
final class FakeHost: HostSystem {
    struct State {
        var accounts: [UserAccount] = []
        var groups: [String: gid_t] = [:]
        var occupied: [Int: DisplayOccupancy] = [:]
        /// Users whose login the account stack refuses, with its sentence.
        var refusedLogins: [String: String] = [:]
        /// How the next starts' Xvnc answer, in order; `.answered` once this runs out.
        var readiness: [RFBReadiness] = []
        /// The Xvnc log a start that did not answer leaves behind.
        var xvncLog: [String] = []
        var viewers: [String: Int] = [:]
        /// Live processes: pid → (session id, identity).
        var processes: [pid_t: (session: String, identity: ProcessIdentity)] = [:]
        /// Pids that ignore SIGTERM (a cgroup kill still ends them).
        var stubborn: Set<pid_t> = []
        var exitHandlers: [pid_t: [@Sendable () -> Void]] = [:]
        var passwords: [String: [UInt8]] = [:]
        /// While set, a start waits for its Xvnc's greeting: a test can look at a session in `starting`.
        var holdGreeting = false
        /// Programs on the host besides Xvnc (a desktop's needs).
        var installed: Set<String> = ["/usr/bin/xterm", "/usr/bin/openbox-session"]
        /// The next desktop ends at once, this way.
        var desktopEndsAtOnce: ProcessEnd?
        /// Making a session directory fails (a full disk, say).
        var failDirectory = false
        var nextPID: pid_t = 1000
        var events: [String] = []
        /// MemAvailable as the fake kernel reports it.
        var memoryAvailable: Int? = 16 << 30
        /// Homes the fake account database names that are not there.
        var missingHomes: Set<String> = []
    }

    let state = Mutex(State())
    let sessionHelperPath: String? = "/usr/libexec/deskd/deskd-session"
    static let xvnc = "/usr/bin/Xtigervnc"

    init(users: [(String, uid_t)] = [("alice", 1001), ("bob", 1002)]) {
        state.withLock { state in
            state.accounts = users.map { UserAccount(name: $0.0, uid: $0.1, gid: $0.1, home: "/home/\($0.0)", shell: "/bin/sh", groups: [$0.1]) }
        }
    }

    var events: [String] { state.withLock { $0.events } }
    private func note(_ event: String) { state.withLock { $0.events.append(event) } }

    /// Live pids of a session.
    func pids(of sessionID: String) -> [pid_t] {
        state.withLock { $0.processes.filter { $0.value.session == sessionID }.map(\.key).sorted() }
    }

    /// Ends a process as if it exited on its own, and tells whoever watches it.
    func exit(_ pid: pid_t) {
        let handlers = state.withLock { state in
            state.processes[pid] = nil
            return state.exitHandlers.removeValue(forKey: pid) ?? []
        }
        for handler in handlers { handler() }
    }

    // MARK: Accounts

    func account(named name: String) -> UserAccount? { state.withLock { $0.accounts.first { $0.name == name } } }
    func account(uid: uid_t) -> UserAccount? { state.withLock { $0.accounts.first { $0.uid == uid } } }
    func groupID(named name: String) -> gid_t? { state.withLock { $0.groups[name] } }

    // MARK: Displays

    func displayOccupancy(in range: ClosedRange<Int>, rfbPortBase: Int?) -> @Sendable (Display) -> DisplayOccupancy {
        let occupied = state.withLock { $0.occupied }
        return { occupied[$0.number] ?? .free }
    }

    func memoryAvailable() -> Int? { state.withLock { $0.memoryAvailable } }

    func reclaimStaleLock(_ display: Display) {}
    func reclaimStaleLock(_ display: Display, ownedBy uid: uid_t) { note("reclaim lock \(display) of uid \(uid)") }
    func releaseLock(_ display: Display, ownedBy pid: pid_t) { note("release lock \(display)") }
    func prepareXSocketDirectory() throws(OSError) {}
    func isExecutable(_ path: String) -> Bool { path == Self.xvnc || state.withLock { $0.installed.contains(path) } }
    func isDirectory(_ path: String) -> Bool { state.withLock { !$0.missingHomes.contains(path) } }
    func isFile(_ path: String) -> Bool { state.withLock { $0.installed.contains(path) } }

    // MARK: Files

    func createSessionDirectory(_ directory: SessionDirectory, owner: uid_t, group: gid_t, contents: SessionDirectory.Contents) throws(OSError) {
        if state.withLock({ $0.failDirectory }) { throw OSError("mkdir", path: directory.path, errno: ENOSPC) }
        state.withLock { $0.passwords[directory.path] = contents.password }
        note("create directory")
    }

    func readPassword(of directory: SessionDirectory) -> [UInt8]? { state.withLock { $0.passwords[directory.path] } }

    func replacePassword(of directory: SessionDirectory, with bytes: [UInt8], owner: uid_t, group: gid_t) throws(OSError) {
        state.withLock { $0.passwords[directory.path] = bytes }
    }

    func removeSessionDirectory(_ directory: SessionDirectory) {
        state.withLock { _ = $0.passwords.removeValue(forKey: directory.path) }
        note("remove directory")
    }

    func publish(_ display: Display, sessionID: String, in directories: SessionDirectories) throws(OSError) { note("publish \(display)") }
    func unpublish(_ display: Display, sessionID: String, in directories: SessionDirectories) { note("unpublish \(display)") }
    func readRootFile(_ path: String, limit: Int) -> [UInt8]? { nil }
    func tail(of log: String, lines: Int) -> [String] { state.withLock { Array($0.xvncLog.suffix(lines)) } }

    // MARK: Cgroups

    func delegatedControllers() -> Set<String>? { [] }

    func createCGroup(for id: String, tasks: Int?, memoryBytes: Int?) throws(OSError) -> SessionCGroup? {
        note("create cgroup")
        return cgroupPath(for: id).map(SessionCGroup.init(path:))
    }

    func removeCGroup(_ cgroup: SessionCGroup) { note("remove cgroup") }
    func cgroupPath(for id: String) -> String? { "/sys/fs/cgroup/deskd/" + id }

    // MARK: Processes

    func startLogin(_ spec: SessionHelper.Spec, helper: String, stderr: Int32) throws(OSError) -> any LoginProcess {
        let (helperPID, refusal) = state.withLock { state -> (pid_t, String?) in
            state.nextPID += 1
            return (state.nextPID, state.refusedLogins[spec.account.name])
        }
        note("start login \(spec.account.name) \(spec.display)")
        return FakeLogin(host: self, pid: helperPID, sessionID: spec.sessionID, uid: spec.account.uid, refusal: refusal)
    }

    /// A new process of a session, alive until signalled.
    func spawn(sessionID: String, uid: uid_t, executable: String) -> pid_t {
        state.withLock { state in
            state.nextPID += 1
            state.processes[state.nextPID] = (sessionID, ProcessIdentity(startTicks: UInt64(state.nextPID) * 7, uid: uid, executable: executable))
            return state.nextPID
        }
    }

    func awaitRFB(_ endpoint: RFBEndpoint, host: String, xvnc: pid_t, until deadline: ContinuousClock.Instant) -> RFBReadiness {
        while state.withLock({ $0.holdGreeting }) { usleep(1000) }
        let readiness = state.withLock { $0.readiness.isEmpty ? .answered : $0.readiness.removeFirst() }
        if readiness == .exited { state.withLock { _ = $0.processes.removeValue(forKey: xvnc) } }
        return readiness
    }

    func probe(_ endpoint: RFBEndpoint, host: String, xvnc: pid_t, authenticate: Bool, password: String?, timeout: Duration) -> Result<RFBProbe, RFBClient.Failure> {
        guard identity(of: xvnc) != nil else { return .failure(.refused) }
        return .success(RFBProbe(protocolVersion: "3.8", desktopName: "fake", width: 1024, height: 768, roundTrip: .milliseconds(1)))
    }

    func identity(of pid: pid_t) -> ProcessIdentity? { state.withLock { $0.processes[pid]?.identity } }

    func processes(of session: Session, cgroup: SessionCGroup?) -> [pid_t] { pids(of: session.id) }

    func signal(_ pid: pid_t, _ signal: Int32) {
        note("signal \(signal == SIGKILL ? "KILL" : signal == SIGTERM ? "TERM" : String(signal))")
        let ends = state.withLock { signal == SIGKILL || !$0.stubborn.contains(pid) }
        if ends { exit(pid) }
    }

    func killAll(in cgroup: SessionCGroup) -> Bool {
        note("kill cgroup")
        let id = String(cgroup.path.split(separator: "/").last ?? "")
        for pid in pids(of: id) { exit(pid) }
        return true
    }

    func onExit(of pid: pid_t, _ handler: @escaping @Sendable () -> Void) {
        let gone = state.withLock { state in
            guard state.processes[pid] != nil else { return true }
            state.exitHandlers[pid, default: []].append(handler)
            return false
        }
        if gone { handler() }
    }

    /// The desktop counts as the session's one X client while it runs.
    func desktopClients(server xvnc: pid_t, socket: DisplayClientSocket, cgroup: SessionCGroup?, desktop: pid_t?) -> [pid_t]? {
        guard let desktop, identity(of: desktop) != nil else { return [] }
        return [desktop]
    }

    /// How the next desktop ends at once, if it is set to (`desktopEndsAtOnce`); that session's
    /// desktop leaves the process table, as deskd-session would have reaped it.
    func takeDesktopEnding(sessionID: String) -> ProcessEnd? {
        state.withLock { state in
            guard let how = state.desktopEndsAtOnce else { return nil }
            state.desktopEndsAtOnce = nil
            for (pid, process) in state.processes where process.session == sessionID && process.identity.executable == "/bin/sh" {
                state.processes[pid] = nil
            }
            return how
        }
    }

    func viewerCensus(_ subjects: [ViewerCensus.Subject], socketDirectory: String, health: Bool) -> [String: ViewerCensus.Count] {
        let viewers = state.withLock { $0.viewers }
        return Dictionary(uniqueKeysWithValues: subjects.map { ($0.sessionID, ViewerCensus.Count(viewers: viewers[$0.sessionID] ?? 0, xvncStopped: false)) })
    }
}

/// deskd-session, faked: Xvnc and the desktop are pids in the fake host's table.
struct FakeLogin: LoginProcess {
    let host: FakeHost
    let pid: pid_t
    let sessionID: String
    let uid: uid_t
    let refusal: String?

    func awaitStart(until deadline: ContinuousClock.Instant) -> SessionHelper.Start {
        if let refusal { return .refused(PAMRefusal(status: 13, sentence: refusal)) }
        return .server(host.spawn(sessionID: sessionID, uid: uid, executable: FakeHost.xvnc))
    }

    func startDesktop(until deadline: ContinuousClock.Instant) -> Result<pid_t, OSError> {
        .success(host.spawn(sessionID: sessionID, uid: uid, executable: "/bin/sh"))
    }

    /// A desktop set to end at once (`State.desktopEndsAtOnce`) ends before it settles.
    func awaitDesktop(until deadline: ContinuousClock.Instant, settled: () -> Bool) -> SessionHelper.DesktopStart {
        guard let how = host.takeDesktopEnding(sessionID: sessionID) else { return settled() ? .settled : .stillStarting }
        return .ended(role: .desktop, how: how)
    }
}
