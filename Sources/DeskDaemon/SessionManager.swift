import DeskCore
import DeskLinux
import Foundation
import Glibc
import Logging
import Synchronization

/// The truth about every session deskd runs: starts, lists, kills, and notices exits.
///
/// An actor, so allocation decisions never race: a display is reserved before the first
/// `await` of a start, and concurrent starts land on distinct displays.
public actor SessionManager {
    /// Replaced as a whole on SIGHUP; running sessions keep what they started with.
    private var configuration: DaemonConfiguration
    private let logger: Logger
    private let store: SessionStore
    private let archive: SessionLogArchive
    /// One `logs` read per caller at a time, and a few at once in all.
    private let logReaders = Mutex(ReadGate(reading: "logs"))
    /// The audit trail; the manager writes the entry for every session's end into it.
    nonisolated let audit: AuditTrail
    private let exitMonitor = ExitMonitor()
    private let cgroupBase: String?
    /// deskd-session, beside deskd's binary: the process behind each desktop's PAM login.
    private let helperPath: String?
    /// Under systemd, stderr is the journal: session output is copied there too.
    private let journal = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil

    private var records: [Display: SessionRecord] = [:]
    /// Displays with a start in flight, not yet in `records`, and the uid each is for.
    private var reserved: [Display: UInt32] = [:]
    private var startRate: StartRateLimiter?
    /// Teardowns in flight by session id: a second kill, or Xvnc's exit noticed during a kill,
    /// waits for the one teardown instead of starting another.
    private var teardowns: [String: Task<Void, Never>] = [:]
    /// Session ids whose last probe got no complete handshake.
    private var failedProbes: Set<String> = []

    public init(configuration: DaemonConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.store = SessionStore(directory: configuration.sessionRecordsDirectory)
        self.archive = SessionLogArchive(directory: configuration.sessionLogsDirectory)
        self.audit = AuditTrail(path: configuration.auditLogPath, logger: logger)
        self.cgroupBase = SessionCGroup.defaultBase()
        self.helperPath = SessionHelper.locate()
        self.startRate = configuration.startsPerMinute.map(StartRateLimiter.init(perMinute:))
        try StateDirectory.prepare(configuration)
        if helperPath == nil {
            logger.error("deskd-session is not beside deskd (nor in ../libexec/deskd); no desktop can start until it is installed")
        }
        if cgroupBase == nil {
            logger.warning("no writable cgroup v2 hierarchy; sessions are killed by process group and environment sweep")
        }
        let controllers = cgroupBase.map(SessionCGroup.enableLimitControllers(base:)) ?? []
        for (key, controller, wanted) in [("limits.session_tasks", "pids", configuration.sessionTasksMax != nil),
                                          ("limits.session_memory", "memory", configuration.sessionMemoryMax != nil)]
        where wanted && !controllers.contains(controller) {
            logger.warning("the \(controller) cgroup controller is not delegated to deskd, so \(key) does not apply; limits.conf (pam_limits) still does")
        }
    }

    private var templates: TemplateLibrary { TemplateLibrary(directories: configuration.templateDirectories) }
    private var policy: AccessPolicy { AccessPolicy(minimumUID: configuration.minimumUID) }
    private var allocator: DisplayAllocator { DisplayAllocator(range: configuration.displayRange) }
    private var directories: SessionDirectories { configuration.sessionDirectories }

    /// The directory of a session: by id, or where an older deskd put it.
    private func directory(of record: SessionRecord) -> SessionDirectory {
        record.directory.map(SessionDirectory.init(path:))
            ?? SessionDirectory(path: directories.displays + "/\(record.session.display.number)")
    }

    /// Takes a reloaded configuration for everything that follows: limits, templates, idle
    /// policy, Xvnc options for new sessions. Where things live (socket, directories) cannot
    /// move under a running daemon; a change there is reported and left for a restart.
    public func reload(_ new: DaemonConfiguration) -> [String] {
        var new = new
        var needsRestart: [String] = []
        if new.socketPath != configuration.socketPath { needsRestart.append("daemon.socket"); new.socketPath = configuration.socketPath }
        if new.runtimeDirectory != configuration.runtimeDirectory { needsRestart.append("daemon.runtime_directory"); new.runtimeDirectory = configuration.runtimeDirectory }
        if new.stateDirectory != configuration.stateDirectory { needsRestart.append("daemon.state_directory"); new.stateDirectory = configuration.stateDirectory }
        if new.maxConnections != configuration.maxConnections || new.maxConnectionsPerUser != configuration.maxConnectionsPerUser {
            needsRestart.append("daemon.max_connections")
        }
        if new.startsPerMinute != configuration.startsPerMinute {
            startRate = new.startsPerMinute.map(StartRateLimiter.init(perMinute:))
        }
        configuration = new
        return needsRestart
    }

    /// The admin group now in force (a reload may change it).
    public var adminGroup: String { configuration.adminGroup }

    private let startedAt = Date()

    public func status() async -> DaemonStatus {
        await refresh()
        let sessions = records.values.map(\.session)
        return DaemonStatus(
            daemonVersion: DeskVersion.current, pid: getpid(), startedAt: startedAt,
            uptimeSeconds: Int(Date().timeIntervalSince(startedAt)), socket: configuration.socketPath,
            configurationFile: configuration.configurationFile, sessions: sessions.count,
            sessionsByState: Dictionary(grouping: sessions, by: \.state.rawValue).mapValues(\.count),
            users: Set(sessions.map(\.uid)).count,
            maxSessionsPerUser: configuration.limits.maxSessionsPerUser, maxSessions: configuration.limits.maxSessions
        )
    }

    // MARK: Re-adoption

    /// Takes back every session a previous deskd left running, and forgets the dead ones.
    /// A record is trusted only if /proc agrees on pid, start time, uid and executable.
    public func adoptRunningSessions() async {
        let (loaded, unreadable) = store.loadAll()
        for path in unreadable { logger.warning("dropped unreadable session record", metadata: ["record.path": "\(path)"]) }
        for record in loaded {
            let session = record.session
            if Self.isSameProcess(session) {
                records[session.display] = record
                watch(record)
                logger.info("session adopted", metadata: metadata(session))
            } else {
                logger.info("session gone while deskd was away; cleaning up", metadata: metadata(session))
                await tearDown(record, reason: "gone while deskd was away")
            }
        }
        let archive = self.archive, keep = configuration.keptSessionLogs, live = Set(records.values.map(\.session.id))
        await onDedicatedThread { archive.pruneAll(keep: keep, live: live) }
    }

    static func isSameProcess(_ session: Session) -> Bool {
        guard let process = ProcFS.process(session.pid), process.state != "Z",
              process.startTicks == session.pidStartTicks,
              ProcFS.uid(of: session.pid) == session.uid,
              ProcFS.executable(of: session.pid) == session.executable
        else { return false }
        return true
    }

    // MARK: Start

    public func start(_ request: Request, caller: Caller) async throws(DeskError) -> Session {
        var timings = StartTimings()
        // Root is exempt: it could start Xvnc by hand anyway, and benchmarks start forty at once.
        if caller.uid != 0 {
            try startRate?.admit(uid: caller.uid, now: Double(DispatchTime.now().uptimeNanoseconds) / 1e9)
        }
        let limits = configuration.limits
        let desktopName = request.desktop ?? configuration.defaultDesktop
        try limits.checkDesktop(XstartupTemplate.validate(desktopName: desktopName))
        let template = try templates.template(named: desktopName)
        let geometry = try request.geometry.map { text throws(DeskError) in try Geometry(parsing: text) } ?? limits.fitting(configuration.defaultGeometry)
        try limits.checkGeometry(geometry)
        let depth = try ColorDepth.validate(request.depth ?? configuration.defaultDepth)
        let requested = try request.display.map { number throws(DeskError) in try Display(parsing: String(number), range: configuration.displayRange) }
        let account = try resolveAccount(request.user, caller: caller)
        let groups = limits.allowedGroups.filter { name in GroupDirectory.gid(named: name).map { account.gid == $0 || account.groups.contains($0) } ?? false }
        try limits.checkAccount(.init(name: account.name, groups: groups))
        try limits.checkCapacity(
            user: account.name,
            userSessions: records.values.count { $0.session.uid == account.uid } + reserved.values.count { $0 == account.uid },
            hostSessions: records.count + reserved.count
        )
        guard access(configuration.xvncPath, X_OK) == 0 else {
            throw DeskError(.xvncMissing, "Xtigervnc is not installed at \(configuration.xvncPath); install it with: apt-get install tigervnc-standalone-server.")
        }
        do { try XSocketDirectory.ensure() } catch {
            throw DeskError(.internalError, "cannot prepare \(XSocketDirectory.path): \(error).")
        }

        // Another X server can win a display between our look and Xvnc's own lock: then try the next.
        var tried: Set<Display> = []
        while true {
            // Lock files are anyone's to plant: the look at the host (listeners, then lock files
            // from the lowest display up) runs off the actor, against the displays deskd held
            // when it began; one taken meanwhile sends the choice round again.
            let range = configuration.displayRange
            let held = heldDisplays
            let allocator = self.allocator
            let skipping = tried
            let choice = await onDedicatedThread { () -> Result<(Display, [(Display, String)]), DeskError> in
                let snapshot = DisplaySnapshot.take(displays: range)
                var planted: [(Display, String)] = []
                return Result { () throws(DeskError) in
                    let display = try allocator.choose(requested: requested, skipping: skipping) { display in
                        if held.contains(display) { return .heldByDeskd }
                        let occupancy = snapshot.occupancy(of: display)
                        if case .unusableLock(let what) = occupancy { planted.append((display, what)) }
                        return occupancy
                    }
                    // A stale lock (a dead server's) is cleared here too, for the same reason.
                    XLockFile.reclaim(display)
                    return (display, planted)
                }
            }
            let (display, planted) = try choice.get()
            for (skipped, what) in planted {
                logger.notice("display skipped: its lock file is not an X server's", metadata: ["session.display": "\(skipped)", "lock": "\(what)"])
            }
            if records[display] != nil || reserved[display] != nil {
                if requested != nil {
                    throw DeskError(.displayBusy, "display \(display) is in use: \(DisplayOccupancy.heldByDeskd.reason); pick another or leave out --display.")
                }
                continue
            }
            reserved[display] = account.uid
            do {
                timings.mark("checked")
                let session = try await launch(on: display, account: account, template: template, geometry: geometry, depth: depth, caller: caller, timings: timings,
                                               userXstartup: configuration.honourUserXstartup && request.desktop == nil)
                reserved[display] = nil
                return session
            } catch LaunchError.displayTaken {
                reserved[display] = nil
                tried.insert(display)
                logger.info("display taken by another X server; trying the next", metadata: ["session.display": "\(display)"])
                if requested != nil || tried.count >= 8 {
                    throw DeskError(.displayBusy, "display \(display) was taken by another X server while starting; try again.")
                }
            } catch LaunchError.failed(let error) {
                reserved[display] = nil
                throw error
            } catch {
                reserved[display] = nil
                throw DeskError(.internalError, "\(error)")
            }
        }
    }

    private enum Readiness: Sendable {
        case answered, exited, timedOut
        case impostor(String)
    }

    private enum LaunchError: Error {
        case displayTaken
        case failed(DeskError)
    }

    private func resolveAccount(_ name: String?, caller: Caller) throws(DeskError) -> UserAccount {
        let account: UserAccount
        if let name {
            let found = try Self.existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: found.uid) else {
                throw DeskError(.permissionDenied, "only an admin may start a desktop for another user (\(found.name)); leave out --user to start your own.")
            }
            account = found
        } else {
            guard caller.uid != 0 else {
                throw DeskError(.userNotAllowed, "deskd does not run desktops as root; name the user: deskctl start --user NAME.")
            }
            guard let found = UserAccount.withUID(caller.uid) else {
                throw DeskError(.unknownUser, "your uid \(caller.uid) has no account on this host.")
            }
            account = found
        }
        try policy.checkDesktopAccount(name: account.name, uid: account.uid)
        return account
    }

    /// The named account, or the one sentence every command gives for a name that is not one.
    private static func existingAccount(_ name: String) throws(DeskError) -> UserAccount {
        guard let account = UserAccount.named(name) else {
            throw DeskError(.unknownUser, "there is no user named '\(name)' on this host; check the name with: getent passwd \(name).")
        }
        return account
    }

    private func launch(on display: Display, account: UserAccount, template: XstartupTemplate,
                        geometry: Geometry, depth: Int, caller: Caller, timings: StartTimings, userXstartup: Bool) async throws -> Session {
        var timings = timings
        let id = Self.newSessionID()
        let directory = directories.directory(for: id)
        var xstartup: String
        do {
            xstartup = try template.render([
                "user": account.name, "home": account.home, "display": display.description,
                "geometry": geometry.description, "desktop": template.name, "session_dir": directory.path,
            ])
        } catch { throw LaunchError.failed(error) }
        xstartup = XstartupTemplate.sessionScript(xstartup, preferringUserXstartup: userXstartup)

        guard let helperPath else {
            throw LaunchError.failed(DeskError(.internalError, "deskd-session is not installed beside deskd; reinstall deskd (make install or the package)."))
        }
        let password = SessionPassword.generate()
        try directory.create(owner: account.uid, group: account.gid, contents: .init(
            password: VNCPasswordFile.encode(password: password),
            xauthority: XAuthority.generate().fileContents(for: display),
            xstartup: xstartup, tls: try tlsMaterial()
        ))
        guard let logDirectory = archive.newPath(uid: account.uid, id: id) else {
            let reason = String(cString: strerror(errno))
            directory.remove()
            throw LaunchError.failed(DeskError(.internalError, "cannot create the session's log directory under \(archive.directory): \(reason)."))
        }
        let cgroup = try cgroupBase.map { base throws in try SessionCGroup.create(base: base, name: id) }
        cgroup?.limit(tasks: configuration.sessionTasksMax, memoryBytes: configuration.sessionMemoryMax)
        let environment = [
            "HOME": account.home, "USER": account.name, "LOGNAME": account.name, "SHELL": account.shell,
            "PATH": configuration.sessionPath, "DISPLAY": display.description, "XAUTHORITY": directory.xauthority,
            ProcessSweep.markerKey: id,
        ]
        let exposure = configuration.vncExposure
        // What the owner is told (the display's stable path), and what deskd itself connects to
        // (the session's own directory, which no later session can take over).
        let advertised: RFBEndpoint = exposure.usesTCP ? .tcp(port: display.rfbPort) : .unixSocket(path: directories.rfbSocket(for: display))
        let endpoint: RFBEndpoint = exposure.usesTCP ? advertised : .unixSocket(path: directory.rfbSocket)
        var record = SessionRecord(
            session: Session(
                id: id, user: account.name, uid: account.uid, gid: account.gid, display: display, endpoint: advertised, pid: 0,
                pidStartTicks: 0, executable: configuration.xvncPath, state: .starting, startedAt: Date(),
                desktop: template.name, geometry: geometry, depth: depth
            ),
            cgroup: cgroup?.path,
            directory: directory.path,
            logDirectory: logDirectory
        )
        archive.save(SessionSummary(record.session), in: logDirectory)

        timings.mark("prepared")
        // deskd-session opens the PAM login (the account stack may refuse it) and starts Xvnc
        // as the user inside the session's cgroup; see Sources/deskd-session.
        let helper: SessionHelper
        do {
            helper = try SessionHelper.start(.init(
                account: account, display: display.description, sessionID: id, logDirectory: logDirectory,
                logLimit: configuration.sessionLogBytes, journal: journal, cgroup: cgroup,
                xvnc: [configuration.xvncPath] + xvncArguments(display: display, geometry: geometry, depth: depth, directory: directory, user: account.name),
                xvncUmask: 0o077, desktop: ["/bin/sh", directory.xstartup], environment: environment
            ), helper: helperPath, stderr: journal ? STDERR_FILENO : -1)
        } catch {
            await tearDown(record, reason: "spawn failed")
            throw LaunchError.failed(DeskError(.internalError, "could not start deskd-session: \(error)."))
        }
        record.helper = helper.pid
        exitMonitor.watch(helper.pid) {}   // reaped when it ends, whenever that is
        let startTimeout = configuration.startTimeout
        let started = await onDedicatedThread { helper.awaitStart(until: .now + startTimeout) }
        let xvnc: pid_t
        switch started {
        case .xvnc(let pid):
            xvnc = pid
        case .refused(let sentence):
            await tearDown(record, reason: "login refused")
            throw LaunchError.failed(DeskError(.loginRefused, "\(account.name) may not log in, so no desktop was started: \(sentence). An admin can check the account with: chage -l \(account.name)."))
        case .failed(let sentence):
            await tearDown(record, reason: "deskd-session failed")
            throw LaunchError.failed(DeskError(.internalError, "the desktop's login session could not be opened: \(sentence)."))
        }
        record.session.pid = xvnc

        // Ready means a real RFB handshake with this session's Xvnc, and no one else: the kernel
        // must name Xvnc as the server before its greeting counts. Polled every half millisecond
        // on a thread of its own, so the actor stays free and the answer is not late by a tick.
        timings.mark("spawned")
        let host = exposure.reachableAddress, limit = configuration.startTimeout
        let readiness = await onDedicatedThread { () -> Readiness in
            let deadline = ContinuousClock.now + limit
            while true {
                if !ProcFS.isAlive(xvnc) { return .exited }
                switch RFBHandshake.attempt(endpoint, host: host, xvnc: xvnc, timeoutMilliseconds: 500) {
                case .answered: return .answered
                case .impostor(let what): return .impostor(what)
                case .refused, .silent: break
                }
                if ContinuousClock.now > deadline { return .timedOut }
                usleep(500)
            }
        }
        switch readiness {
        case .answered:
            break
        case .impostor(let what):
            await tearDown(record, reason: "endpoint held by another process")
            logger.warning("session endpoint held by another process; start refused", metadata: metadata(record.session).merging(["endpoint.holder": "\(what)"]) { $1 })
            throw LaunchError.failed(DeskError(.displayBusy, "the desktop on \(display) was not started: \(what); deskd handed out no password. Ask an admin to find that process, or start on another display."))
        case .exited:
            let lines = await onDedicatedThread { SessionDirectory.tail(of: logDirectory + "/xvnc.log") }
            await tearDown(record, reason: "xvnc exited during start")
            if lines.contains(where: { $0.contains("already active") || $0.contains("Address already in use") || $0.contains("Cannot establish any listening sockets") }) {
                throw LaunchError.displayTaken
            }
            throw LaunchError.failed(DeskError(.xvncExited, "Xtigervnc exited before it answered on \(display); its last log lines: \(lines.suffix(4).joined(separator: " | "))"))
        case .timedOut:
            await tearDown(record, reason: "start timed out")
            throw LaunchError.failed(DeskError(.startTimedOut, "Xtigervnc on \(display) did not answer an RFB handshake within \(configuration.startTimeout); see the host's load and try again."))
        }
        timings.mark("ready")
        record.session.pidStartTicks = ProcFS.process(xvnc)?.startTicks ?? 0
        record.session.executable = ProcFS.executable(of: xvnc) ?? configuration.xvncPath
        do { try directories.publish(display, sessionID: id) } catch {
            await tearDown(record, reason: "display link failed")
            throw LaunchError.failed(DeskError(.internalError, "could not link \(directories.displays)/\(display.number) to the session: \(error)."))
        }

        record.session.state = .ready
        records[display] = record
        do { try store.save(record) } catch {
            logger.error("cannot write session record; the session will not survive a daemon restart", metadata: ["error": "\(error)"])
        }
        watch(record)
        var reply = record.session
        reply.password = password
        timings.mark("saved")
        logger.info("session started", metadata: metadata(record.session).merging(["peer.uid": "\(caller.uid)"]) { $1 })
        logger.debug("session start timings", metadata: ["session.display": "\(display)", "timings.ms": "\(timings)"])

        // The desktop starts the moment this reply is on its way: the X server already answers,
        // so making the caller wait for one more fork and exec would buy nothing. `show` has its pid.
        Task { await self.startDesktop(helper, sessionID: id, display: display) }
        return reply
    }

    private func startDesktop(_ helper: SessionHelper, sessionID: String, display: Display) async {
        guard let record = records[display], record.session.id == sessionID, teardowns[sessionID] == nil else { return }
        let deadline = ContinuousClock.now + .seconds(10)
        switch await onDedicatedThread({ helper.startDesktop(until: deadline) }) {
        case .success(let pid):
            guard records[display]?.session.id == sessionID else { return }
            records[display]?.session.desktopPid = pid
            if let updated = records[display] { try? store.save(updated) }
            watchDesktop(pid, sessionID: sessionID)
        case .failure(let error):
            logger.error("could not launch the desktop; ending the session", metadata: metadata(record.session).merging(["error": "\(error)"]) { $1 })
            await tearDown(record, reason: "desktop spawn failed")
        }
    }

    /// The admin's certificate and key, read as root from the configured (root-controlled) paths.
    private func tlsMaterial() throws -> (certificate: [UInt8], key: [UInt8])? {
        let exposure = configuration.vncExposure
        guard let certificatePath = exposure.tlsCertificate, let keyPath = exposure.tlsKey else { return nil }
        guard let certificate = ProcFS.read(certificatePath, limit: 1 << 20), let key = ProcFS.read(keyPath, limit: 1 << 20) else {
            throw LaunchError.failed(DeskError(.internalError, "cannot read the TLS certificate \(certificatePath) or key \(keyPath) (network.tls_certificate, network.tls_key); check that both exist."))
        }
        return (certificate, key)
    }

    private func xvncArguments(display: Display, geometry: Geometry, depth: Int, directory: SessionDirectory, user: String) -> [String] {
        let exposure = configuration.vncExposure
        return [
            display.description,
            // X clients must show the session's cookie: without -auth, every local user could
            // open the display, read the screen and type into it.
            "-auth", directory.xauthority,
            "-nolisten", "tcp",
            "-rfbauth", directory.passwordFile,
            "-geometry", geometry.description,
            "-depth", String(depth),
            "-desktop", "\(user)'s desktop (\(display))",
            "-AlwaysShared",
        ]
        + exposure.xvncArguments(unixSocket: directory.rfbSocket, port: display.rfbPort,
                                 tlsFiles: exposure.tlsCertificate == nil ? nil : (directory.tlsCertificate, directory.tlsKey))
        + (configuration.xvncMaxIdleSeconds.map { ["-MaxIdleTime", String($0)] } ?? [])
        + (configuration.xvncMaxDisconnectionSeconds.map { ["-MaxDisconnectionTime", String($0)] } ?? [])
    }

    private static func newSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    // MARK: List, show, kill

    public func list(all: Bool, caller: Caller) async -> [Session] {
        await refresh()
        return records.values.map(\.session)
            .filter { all && caller.isAdmin ? true : $0.uid == caller.uid }
            .sorted { $0.display < $1.display }
    }

    /// Whose session runs on `display`, for the audit trail (no access check: it is not returned to the caller).
    public func owner(of display: Display) -> (user: String, uid: UInt32)? {
        records[display].map { ($0.session.user, $0.session.uid) }
    }

    public func show(_ display: Display, caller: Caller) throws(DeskError) -> Session {
        guard let session = records[display]?.session else {
            throw DeskError(.noSuchSession, "there is no deskd session on display \(display); see the running ones with deskctl list.")
        }
        guard policy.mayAct(caller, onSessionOf: session.uid) else { throw AccessPolicy.notYours(display, action: "see") }
        return session
    }

    /// The end of a session's output and how its processes ended, for its owner and admins: the
    /// running session on a display, else the one that ended there last, or any kept one by id.
    public func logs(display: Display?, sessionID: String?, lines: Int, caller: Caller) async throws(DeskError) -> SessionLogs {
        if let sessionID, !SessionSummary.isSessionID(sessionID) {
            throw DeskError(.badRequest, "'\(sessionID)' is not a session id (32 hex digits, as in deskctl show or history); or name a display such as :3.")
        }
        if let refusal = logReaders.withLock({ $0.enter(uid: caller.uid) }) { throw refusal }
        defer { logReaders.withLock { $0.leave(uid: caller.uid) } }
        let archive = self.archive
        let running = display.flatMap { records[$0]?.logDirectory }
        let found: (summary: SessionSummary, path: String)? = await onDedicatedThread {
            if let path = running ?? sessionID.flatMap(archive.path(of:)) {
                return archive.summary(in: path).map { ($0, path) }
            }
            return display.flatMap(archive.newest(on:))
        }
        let what = sessionID.map { "session \($0)" } ?? display.map { "display \($0)" } ?? "that session"
        guard let found else {
            throw DeskError(.noSuchSession, "deskd keeps no logs for \(what); logs are kept for running sessions and each user's last \(configuration.keptSessionLogs) ended ones (see deskctl history).")
        }
        // The account as it was when the session ran: a uid handed to a new account since does not inherit the logs.
        guard caller.isAdmin || (found.summary.uid == caller.uid && found.summary.user == caller.userName) else {
            throw DeskError(.permissionDenied, "the logs of \(what) belong to another user's session; only its owner or an admin may read them.")
        }
        let count = min(max(lines, 1), SessionLogs.maxLines)
        return await onDedicatedThread { archive.logs(of: found.summary, in: found.path, lines: count, bytes: SessionLogs.maxReplyBytes) }
    }

    public func kill(_ request: Request, caller: Caller) async throws(DeskError) -> [Session] {
        let targets: [SessionRecord]
        if let number = request.display {
            let display = try Display(parsing: String(number), range: Display.supportedRange)
            guard let record = records[display] else {
                throw DeskError(.noSuchSession, "there is no deskd session on display \(display); see the running ones with deskctl list.")
            }
            guard policy.mayAct(caller, onSessionOf: record.session.uid) else { throw AccessPolicy.notYours(display, action: "kill") }
            targets = [record]
        } else if let name = request.user {
            let account = try Self.existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: account.uid) else {
                throw DeskError(.permissionDenied, "only an admin may kill another user's (\(account.name)) sessions.")
            }
            targets = records.values.filter { $0.session.uid == account.uid }
        } else if request.all == true {
            targets = records.values.filter { policy.mayAct(caller, onSessionOf: $0.session.uid) }
        } else {
            throw DeskError(.badRequest, "say which sessions to kill: a display (:N), --user NAME or --all.")
        }
        var killed: [Session] = []
        for record in targets.sorted(by: { $0.session.display < $1.session.display }) {
            logger.info("session kill requested", metadata: metadata(record.session).merging(["peer.uid": "\(caller.uid)"]) { $1 })
            await tearDown(record, reason: "killed by \(caller.userName ?? "uid \(caller.uid)")")
            var session = record.session
            session.state = .exited
            killed.append(session)
        }
        return killed
    }

    /// Gives a running session a new password (or, `viewOnly`, a new view-only password beside
    /// the kept full one). Xvnc reads its password file at every authentication, so the next
    /// viewer needs the new one and nothing restarts; connected viewers stay connected.
    public func rotatePassword(_ display: Display, viewOnly: Bool, caller: Caller) async throws(DeskError) -> Session {
        guard let record = records[display] else {
            throw DeskError(.noSuchSession, "there is no deskd session on display \(display); see the running ones with deskctl list.")
        }
        let session = record.session
        guard policy.mayAct(caller, onSessionOf: session.uid) else { throw AccessPolicy.notYours(display, action: "change the password of") }
        let directory = directory(of: record)
        let fresh = SessionPassword.generate()
        let bytes: [UInt8]
        if viewOnly {
            guard let current = await onDedicatedThread({ directory.readPasswordFile() }).flatMap(VNCPasswordFile.decode) else {
                throw DeskError(.internalError, "the password file of \(display) is missing or damaged; set a new full password first with: deskctl passwd \(display).")
            }
            bytes = VNCPasswordFile.encode(password: current, viewOnly: fresh)
        } else {
            // A new full password also drops any view-only one: rotating is how access is revoked.
            bytes = VNCPasswordFile.encode(password: fresh)
        }
        // The directory is the user's: written off the actor, like every other touch of it.
        let written = await onDedicatedThread { () -> Result<Void, OSError> in
            Result { () throws(OSError) in try directory.replacePassword(bytes, owner: session.uid, group: session.gid) }
        }
        if case .failure(let error) = written {
            throw DeskError(.internalError, "could not write the new password for \(display): \(error).")
        }
        logger.info(viewOnly ? "session view-only password set" : "session password rotated", metadata: metadata(session).merging(["peer.uid": "\(caller.uid)"]) { $1 })
        var reply = session
        if viewOnly { reply.viewOnlyPassword = fresh } else { reply.password = fresh }
        return reply
    }

    // MARK: Viewers, health, reaping

    /// Updates viewer counts, idle times and health from the kernel (`ViewerCensus`). The census
    /// runs off the actor, so however many sockets the host holds, requests are not held up;
    /// its answer is applied by session id, to the sessions still there when it comes back.
    /// Cheap enough to run every second.
    public func refresh(now: Date = Date()) async {
        guard !records.isEmpty else { return }
        let subjects = records.values.map { record in
            ViewerCensus.Subject(sessionID: record.session.id, xvnc: record.session.pid, endpoint: endpoint(of: record))
        }
        let socketDirectory = configuration.runtimeDirectory
        let counts = await onDedicatedThread { ViewerCensus.take(subjects, socketDirectory: socketDirectory) }
        for (display, record) in records {
            guard let count = counts[record.session.id] else { continue }
            var session = record.session
            let clients = count.viewers
            if session.clients > 0 && clients == 0 { session.lastClientAt = now }
            if clients > 0 { session.lastClientAt = nil }
            session.clients = clients
            session.idleSeconds = clients > 0 ? 0 : max(0, Int(now.timeIntervalSince(session.lastClientAt ?? session.startedAt)))
            session.state = count.xvncStopped || failedProbes.contains(session.id) ? .unresponsive : .ready
            guard session != record.session else { continue }
            let persist = session.lastClientAt != record.session.lastClientAt || session.state != record.session.state
            records[display]?.session = session
            if persist, let updated = records[display] { try? store.save(updated) }
        }
    }

    /// Displays with a session of deskd's or a start in flight.
    private var heldDisplays: Set<Display> { Set(records.keys).union(reserved.keys) }

    /// Where the session's Xvnc serves RFB.
    private func endpoint(of record: SessionRecord) -> RFBEndpoint {
        record.session.rfbPort.map(RFBEndpoint.tcp(port:)) ?? .unixSocket(path: directory(of: record).rfbSocket)
    }

    /// Applies the configured idle limit, as root would with `deskctl reap --idle`.
    public func enforceIdleLimit() async {
        guard let limit = configuration.idleLimitSeconds else { return }
        let daemon = Caller(uid: 0, gid: 0, pid: getpid(), userName: "deskd", isAdmin: true)
        _ = try? await reap(Request(command: .reap, idleSeconds: limit), caller: daemon)
    }

    /// Displays in range held by X servers deskd did not start: never touched, never allocated over.
    public func foreignDisplays(caller: Caller) async -> [ForeignDisplay] {
        guard caller.isAdmin else { return [] }
        let range = configuration.displayRange
        let held = heldDisplays
        return await onDedicatedThread {
            let snapshot = DisplaySnapshot.take(displays: range)
            return range.map(Display.init).compactMap { display in
                guard !held.contains(display) else { return nil }
                let occupancy = snapshot.occupancy(of: display)
                guard !occupancy.isUsable else { return nil }
                var pid: Int32?
                if case .liveLock(let owner) = occupancy, owner > 0 { pid = owner }
                return ForeignDisplay(display: display, reason: occupancy.reason, pid: pid)
            }
        }
    }

    /// Kills the sessions without a viewer for at least `idleSeconds` (or, dry, just names them).
    public func reap(_ request: Request, caller: Caller) async throws(DeskError) -> [Session] {
        guard let idle = request.idleSeconds, idle > 0 else {
            throw DeskError(.invalidDuration, "reap needs an idle time, for example: deskctl reap --idle 2h.")
        }
        var uid: UInt32?
        if let name = request.user {
            let account = try Self.existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: account.uid) else {
                throw DeskError(.permissionDenied, "only an admin may reap another user's (\(account.name)) sessions.")
            }
            uid = account.uid
        }
        await refresh()
        let idleOnes = records.values
            .filter { policy.mayAct(caller, onSessionOf: $0.session.uid) && (uid == nil || $0.session.uid == uid) }
            .filter { $0.session.clients == 0 && $0.session.idleSeconds >= idle }
            .sorted { $0.session.display < $1.session.display }
        if request.dryRun == true { return idleOnes.map(\.session) }
        var reaped: [Session] = []
        for record in idleOnes {
            logger.info("reaping idle session", metadata: metadata(record.session).merging(["session.idleSeconds": "\(record.session.idleSeconds)", "peer.uid": "\(caller.uid)"]) { $1 })
            await tearDown(record, reason: caller.pid == getpid() ? "idle limit" : "reaped idle by \(caller.userName ?? "uid \(caller.uid)")")
            var session = record.session
            session.state = .exited
            reaped.append(session)
        }
        return reaped
    }

    /// A real RFB session with the session's Xvnc: deskd's own client, authenticated with the
    /// session's password (read back from its password file), up to a framebuffer update. It
    /// connects only once the kernel says the endpoint is Xvnc's, so a squatter never sees a
    /// password response. A server that does not answer within `timeoutSeconds` is unresponsive.
    public func probe(_ display: Display, caller: Caller, timeoutSeconds: Int) async throws(DeskError) -> ProbeReport {
        let session = try show(display, caller: caller)
        guard let record = records[display] else { throw DeskError(.noSuchSession, "display \(display) ended while it was being probed.") }
        let directory = directory(of: record)
        let password = await onDedicatedThread { directory.readPasswordFile() }.flatMap(VNCPasswordFile.decode)
        let endpoint = endpoint(of: record)
        let host = configuration.vncExposure.reachableAddress
        let passwordProbe = configuration.vncExposure.allowsPasswordProbe
        let xvnc = session.pid
        let outcome = await onDedicatedThread { () -> Result<ProbeReport, RFBClient.Failure> in
            let start = ContinuousClock.now
            do {
                let client = try RFBClient.connect(endpoint, host: host, xvnc: xvnc, timeout: .seconds(timeoutSeconds))
                let greeting = try client.greet()
                let version = greeting.version.dropFirst(4).split(separator: ".").compactMap { Int($0) }.map(String.init).joined(separator: ".")
                // TLS with a certificate only: the server answering its handshake is all deskd can check.
                guard passwordProbe else {
                    return .success(ProbeReport(display: display, answered: true, protocolVersion: version, roundTripMilliseconds: Self.milliseconds(ContinuousClock.now - start)))
                }
                try client.authenticate(greeting, password: password)
                let server = try client.initialise()
                try client.refreshOnePixel(server)
                return .success(ProbeReport(
                    display: display, answered: true, protocolVersion: version, desktopName: server.desktopName,
                    width: server.width, height: server.height, roundTripMilliseconds: Self.milliseconds(ContinuousClock.now - start)
                ))
            } catch {
                return .failure(error as? RFBClient.Failure ?? .silent)
            }
        }
        switch outcome {
        case .success(let report):
            failedProbes.remove(session.id)
            await refresh()
            return report
        case .failure(.impostor(let what)):
            logger.warning("session endpoint held by another process", metadata: metadata(session).merging(["endpoint.holder": "\(what)"]) { $1 })
            throw DeskError(.displayBusy, "display \(display) was not probed: \(what); deskd sent it nothing. Kill the session (deskctl kill \(display)) and start a new one.")
        case .failure:
            // Only for a session still here: one that ended while it was probed keeps no mark.
            if records.values.contains(where: { $0.session.id == session.id }) { failedProbes.insert(session.id) }
            await refresh()
            return ProbeReport(display: display, answered: false)
        }
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000
    }

    // MARK: Exits and teardown

    private func watch(_ record: SessionRecord) {
        let id = record.session.id
        exitMonitor.watch(record.session.pid) { [weak self] in
            Task { await self?.processExited(sessionID: id, role: "xvnc") }
        }
        if let desktop = record.session.desktopPid { watchDesktop(desktop, sessionID: id) }
    }

    /// Watched even when its exit does not end the session: the monitor also reaps it.
    private func watchDesktop(_ pid: pid_t, sessionID: String) {
        exitMonitor.watch(pid) { [weak self] in
            Task { await self?.processExited(sessionID: sessionID, role: "desktop") }
        }
    }

    private func processExited(sessionID: String, role: String) async {
        guard teardowns[sessionID] == nil,
              let record = records.values.first(where: { $0.session.id == sessionID }) else { return }
        if role == "desktop" && !configuration.desktopExitEndsSession {
            logger.info("desktop exited; the session stays (desktop_exit_ends_session is off)", metadata: metadata(record.session))
            return
        }
        logger.info("session process exited; ending the session", metadata: metadata(record.session).merging(["process.role": "\(role)"]) { $1 })
        await tearDown(record, reason: "\(role) exited")
    }

    /// Ends everything of a session and removes its traces. One teardown per session id: a
    /// second caller (two kills at once, an exit noticed during a kill) waits for the first.
    private func tearDown(_ record: SessionRecord, reason: String) async {
        let id = record.session.id
        if let running = teardowns[id] {
            await running.value
            return
        }
        let task = Task { await self.performTearDown(record, reason: reason) }
        teardowns[id] = task
        await task.value
        teardowns[id] = nil
    }

    /// SIGTERM to every process, SIGKILL after the grace period, then the cgroup, the lock and
    /// socket Xvnc left, the session directory, the display link and the record. Everything is
    /// found by the session's id (its cgroup, its directory, its record) or checked against it
    /// (the lock must name its Xvnc, the link must point at its directory), so a newer session
    /// on the same display is never touched. Safe for a session half started or already gone.
    private func performTearDown(_ record: SessionRecord, reason: String) async {
        let session = record.session
        defer { failedProbes.remove(session.id) }
        let cgroup = record.cgroup.map(SessionCGroup.init(path:))
        let members: @Sendable () -> [pid_t] = {
            if let cgroup, cgroup.exists { return cgroup.pids }
            var pids = ProcessSweep.pids(uid: session.uid, sessionID: session.id)
            if Self.isSameProcess(session), !pids.contains(session.pid) { pids.append(session.pid) }
            return pids
        }

        var remaining = members()
        if !remaining.isEmpty {
            for pid in remaining { Glibc.kill(pid, SIGTERM) }
            remaining = await Self.waitUntilEmpty(members, for: configuration.killGrace)
        }
        if !remaining.isEmpty {
            logger.info("session did not end on SIGTERM; sending SIGKILL", metadata: metadata(session).merging(["session.remaining": "\(remaining.count)"]) { $1 })
            if let cgroup, cgroup.exists { cgroup.killAll() } else { for pid in remaining { Glibc.kill(pid, SIGKILL) } }
            remaining = await Self.waitUntilEmpty(members, for: .seconds(5))
            if !remaining.isEmpty {
                logger.error("session processes survived SIGKILL", metadata: metadata(session).merging(["session.pids": "\(remaining)"]) { $1 })
            }
        }
        // deskd-session ends once the last session process has: it closes the PAM login then.
        if let helper = record.helper, helper > 0 {
            let left = await Self.waitUntilEmpty({ ProcFS.isAlive(helper) ? [helper] : [] }, for: .seconds(5))
            if !left.isEmpty {
                logger.error("deskd-session did not end after its session; killing it", metadata: metadata(session).merging(["helper.pid": "\(helper)"]) { $1 })
                Glibc.kill(helper, SIGKILL)
            }
        }
        cgroup?.remove()
        // Reap what is deskd's own child and was never watched (a start that failed early).
        for pid in [session.pid, session.desktopPid ?? 0] where pid > 0 { waitpid(pid, nil, WNOHANG) }
        directories.unpublish(session.display, sessionID: session.id)
        // An older deskd's directory sits at displays/<n>; once that is a link, it is a newer session's.
        // The tree is the user's, as large and as slow as they made it, and the lock is anyone's:
        // both are dealt with off the actor, so a session of 400,000 files ends slowly without
        // holding up anyone else's request.
        let directory = directory(of: record)
        let isOwnDirectory = record.directory != nil
        await onDedicatedThread {
            if session.pid > 0 { XLockFile.release(session.display, ownedBy: session.pid) }
            var info = stat()
            if isOwnDirectory || (lstat(directory.path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR) {
                directory.remove()
            }
        }
        store.remove(sessionID: session.id)
        if records[session.display]?.session.id == session.id {
            records[session.display] = nil
        }
        logger.info("session ended", metadata: metadata(session).merging(["session.reason": "\(reason)"]) { $1 })
        await archiveEnd(of: record, reason: reason)
    }

    /// Notes the end beside the session's logs and in the audit trail, whatever ended it, and
    /// drops the owner's logs beyond their newest `sessions.keep_logs` ended sessions.
    /// deskd-session has exited by now (teardown waits for it), so how each process ended is on disk.
    private func archiveEnd(of record: SessionRecord, reason: String) async {
        let session = record.session
        var exits: [ProcessLog.Role: String] = [:]
        if let path = record.logDirectory {   // an older deskd's session keeps no logs
            let summary = SessionSummary(session)
            let archive = self.archive, keep = configuration.keptSessionLogs
            let live = Set(records.values.map(\.session.id)).union(teardowns.keys).subtracting([session.id])
            exits = await onDedicatedThread {
                let exits = archive.end(in: path, summary, reason: reason, at: Date())
                archive.prune(owner: session.uid, keep: keep, live: live)
                return exits
            }
        }
        audit.record(AuditEntry(
            time: Date(), peerUID: 0, peerPID: getpid(), peerUser: "deskd", command: .ended, user: session.user, uid: session.uid,
            display: session.display, detail: "session=\(session.id)", ok: true, outcome: SessionLogs.outcome(reason: reason, exits: exits)
        ), changedSessions: true)
    }

    private static func waitUntilEmpty(_ members: @Sendable () -> [pid_t], for limit: Duration) async -> [pid_t] {
        let deadline = ContinuousClock.now + limit
        var remaining = members()
        while !remaining.isEmpty && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            remaining = members()
        }
        return remaining
    }

    private func metadata(_ session: Session) -> Logger.Metadata {
        ["session.display": "\(session.display)", "session.user": "\(session.user)", "session.pid": "\(session.pid)"]
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

/// Where a start spends its time, for `log_level = "debug"` and for profiling.
struct StartTimings: CustomStringConvertible {
    private let origin = ContinuousClock.now
    private var marks: [(String, Duration)] = []

    mutating func mark(_ phase: String) { marks.append((phase, ContinuousClock.now - origin)) }

    var description: String {
        marks.map { phase, elapsed in
            let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            return "\(phase)=\(String(format: "%.1f", ms))"
        }.joined(separator: ",")
    }
}
