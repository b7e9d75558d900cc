import DeskCore
import DeskLinux
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// What deskd does, one typed method per verb: start, list, show, kill, reap, probe, passwd,
/// logs, status; plus what it does on its own (re-adoption, the viewer census, the idle limit).
///
/// Each method takes the caller (from SO_PEERCRED) and decides what they may do. Sessions are
/// `ManagedSession` actors found through the `SessionRegistry`; the host is reached only
/// through `HostSystem`, so all of this runs under a fake host in the unit tests.
public final class SessionService: Sendable {
    let environment: SessionEnvironment
    /// One `logs` read per caller at a time, and a few at once in all.
    private let logReaders = Mutex(ReadGate(reading: "logs"))
    private let startRate: Mutex<StartRateLimiter?>
    private let startedAt = Date()

    private var host: any HostSystem { environment.host }
    private var registry: SessionRegistry { environment.registry }
    private var logger: Logger { environment.logger }
    var audit: AuditTrail { environment.audit }
    /// The configuration now in force.
    var configuration: DaemonConfiguration { environment.configuration.value }

    public convenience init(configuration: DaemonConfiguration, logger: Logger) throws {
        try self.init(configuration: configuration, host: LinuxHost(), logger: logger)
    }

    public init(configuration: DaemonConfiguration, host: any HostSystem, logger: Logger) throws {
        try StateDirectory.prepare(configuration)
        let metrics = DaemonMetrics()
        self.environment = SessionEnvironment(
            host: host,
            store: SessionStore(directory: configuration.sessionRecordsDirectory),
            archive: SessionLogArchive(directory: configuration.sessionLogsDirectory),
            audit: AuditTrail(path: configuration.auditLogPath, logger: logger),
            registry: SessionRegistry(),
            configuration: ConfigurationInForce(configuration),
            logger: logger,
            journal: ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil,
            links: BrowserLinks(),
            browsers: BrowserRelays(),
            metrics: metrics,
            listeners: SideListenerBoard(factory: metrics.factory)
        )
        self.startRate = Mutex(configuration.startsPerMinute.map(StartRateLimiter.init(perMinute:)))
        if host.sessionHelperPath == nil {
            logger.error("deskd-session is not beside deskd (nor in ../libexec/deskd); no desktop can start until it is installed")
        }
        guard let controllers = host.delegatedControllers() else {
            logger.warning("no writable cgroup v2 hierarchy; sessions are killed by process group and environment sweep")
            return
        }
        for (key, controller, wanted) in [("limits.session_tasks", "pids", configuration.sessionTasksMax != nil),
                                          ("limits.session_memory", "memory", configuration.sessionMemoryMax != nil)]
        where wanted && !controllers.contains(controller) {
            logger.warning("the \(controller) cgroup controller is not delegated to deskd, so \(key) does not apply; limits.conf (pam_limits) still does")
        }
    }

    private var policy: AccessPolicy { AccessPolicy(minimumUID: configuration.minimumUID) }

    // MARK: Configuration

    /// Takes a reloaded configuration for everything that follows: limits, templates, idle
    /// policy, Xvnc options for new sessions. Where things live (socket, directories) cannot
    /// move under a running daemon; a change there is reported and left for a restart.
    public func reload(_ new: DaemonConfiguration) -> [String] {
        let old = configuration
        var new = new
        var needsRestart: [String] = []
        if new.socketPath != old.socketPath { needsRestart.append("daemon.socket"); new.socketPath = old.socketPath }
        if new.runtimeDirectory != old.runtimeDirectory { needsRestart.append("daemon.runtime_directory"); new.runtimeDirectory = old.runtimeDirectory }
        if new.stateDirectory != old.stateDirectory { needsRestart.append("daemon.state_directory"); new.stateDirectory = old.stateDirectory }
        if new.maxConnections != old.maxConnections || new.maxConnectionsPerUser != old.maxConnectionsPerUser {
            needsRestart.append("daemon.max_connections")
        }
        if new.web != old.web { needsRestart.append("web"); new.web = old.web }
        if new.metricsListen != old.metricsListen { needsRestart.append("metrics.listen"); new.metricsListen = old.metricsListen }
        if new.startsPerMinute != old.startsPerMinute {
            startRate.withLock { $0 = new.startsPerMinute.map(StartRateLimiter.init(perMinute:)) }
        }
        environment.configuration.replace(new)
        return needsRestart
    }

    /// The admin group now in force (a reload may change it).
    public var adminGroup: String { configuration.adminGroup }

    /// Root and members of the admin group are admins. Membership comes from the account
    /// database for the peer's uid alone: not from the peer's gid, which a `newgrp` or `sg`
    /// shell (or a setgid program) can make the admin group's long after the user left it.
    public func caller(_ peer: PeerCredentials) -> Caller {
        let account = host.account(uid: peer.uid)
        return Caller(uid: peer.uid, gid: peer.gid, pid: peer.pid, userName: account?.name, isAdmin: isAdmin(peer.uid, account: account))
    }

    /// Whether `uid` is an admin now (a link an admin made is checked again when it is used).
    func isAdmin(_ uid: UInt32) -> Bool {
        uid == 0 || isAdmin(uid, account: host.account(uid: uid))
    }

    private func isAdmin(_ uid: UInt32, account: UserAccount?) -> Bool {
        // Root is admin without a look at the group database.
        uid == 0 || (host.groupID(named: adminGroup).map { gid in account?.groups.contains(gid) ?? false } ?? false)
    }

    // MARK: Status

    /// The desktops this host can start, and what those it cannot would need.
    public func desktops() -> [DesktopInfo] {
        let configuration = self.configuration
        return TemplateLibrary(directories: configuration.templateDirectories)
            .catalog(defaultDesktop: configuration.defaultDesktop, path: configuration.sessionPath, isExecutable: host.isExecutable)
    }

    public func status() async -> DaemonStatus {
        await refresh()
        let configuration = self.configuration
        var sessions: [Session] = []
        for managed in await registry.all { sessions.append(await managed.session) }
        let available = host.memoryAvailable()
        let listeners = environment.listeners.all
        return DaemonStatus(
            daemonVersion: DeskVersion.current, pid: getpid(), startedAt: startedAt,
            uptimeSeconds: Int(Date().timeIntervalSince(startedAt)), socket: configuration.socketPath,
            configurationFile: configuration.configurationFile, sessions: sessions.count,
            sessionsByState: Dictionary(grouping: sessions, by: \.state.rawValue).mapValues(\.count),
            users: Set(sessions.map(\.uid)).count,
            maxSessionsPerUser: configuration.limits.maxSessionsPerUser, maxSessions: configuration.limits.maxSessions,
            freeDisplays: await freeDisplayCount(configuration),
            memoryAvailable: available, memoryReserve: configuration.memoryReserve,
            sessionsMemoryAllows: configuration.memoryReserve.flatMap { reserve in
                available.map { max(0, ($0 - reserve) / configuration.memoryPerSession) }
            },
            listeners: listeners.isEmpty ? nil : listeners
        )
    }

    // MARK: Re-adoption

    /// Takes back every session a previous deskd left running, and ends the dead ones.
    /// A record is trusted only if /proc agrees on pid, start time, uid and executable.
    public func adoptRunningSessions() async {
        let (loaded, unreadable) = environment.store.loadAll()
        for path in unreadable { logger.warning("dropped unreadable session record", metadata: ["record.path": "\(path)"]) }
        // What ran before is taken back whatever the limits say now.
        var limits = SessionLimits()
        limits.maxSessionsPerUser = nil
        limits.maxSessions = nil
        for record in loaded {
            let session = ManagedSession(record: record, lifecycle: .ready, environment: environment)
            let claimed = (try? await registry.claim(record.session.display, for: session, limits: limits)) ?? false
            if claimed && host.isSameProcess(record.session) {
                await session.adopt()
                logger.info("session adopted", metadata: record.session.logMetadata)
            } else {
                logger.info("session gone while deskd was away; cleaning up", metadata: record.session.logMetadata)
                await session.end(.goneWhileAway)
            }
        }
        let archive = environment.archive, keep = configuration.keptSessionLogs, live = await registry.ids
        await onDedicatedThread { archive.pruneAll(keep: keep, live: live) }
    }

    // MARK: Start

    func start(_ options: StartOptions, caller: Caller) async throws(DeskError) -> Session {
        let began = ContinuousClock.now
        do {
            let session = try await startSession(options, caller: caller)
            environment.metrics.sessionStarted(after: .now - began)
            return session
        } catch {
            environment.metrics.startFailed(error.code)
            throw error
        }
    }

    private func startSession(_ options: StartOptions, caller: Caller) async throws(DeskError) -> Session {
        let timings = StartTimings()
        let configuration = self.configuration
        // Root is exempt: it could start Xvnc by hand anyway, and benchmarks start forty at once.
        if caller.uid != 0 {
            let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
            try startRate.withLock { rate throws(DeskError) in try rate?.admit(uid: caller.uid, now: now) }
        }
        let limits = configuration.limits
        let desktopName = options.desktop ?? configuration.defaultDesktop
        try limits.checkDesktop(desktopName)
        let library = TemplateLibrary(directories: configuration.templateDirectories)
        let template = try library.template(named: desktopName)
        let honoursUserXstartup = configuration.honourUserXstartup && options.desktop == nil
        // A desktop whose programs are not there would only exit at once; say what to install.
        // (The user's own ~/.vnc/xstartup, where it runs instead, is theirs to get right.)
        if !honoursUserXstartup {
            // A template that picks among others (auto) is installed when one of its picks is.
            let info = (template.picks.isEmpty ? nil : desktops().first { $0.name == template.name })
                ?? library.describe(template, defaultDesktop: configuration.defaultDesktop, path: configuration.sessionPath, isExecutable: host.isExecutable)
            if !info.installed {
                let others = desktops().filter(\.installed).map(\.name)
                throw DeskError(.invalidDesktop, info.notInstalledSentence(installedOthers: others))
            }
        }
        let geometry = options.geometry ?? limits.fitting(configuration.defaultGeometry)
        try limits.checkGeometry(geometry)
        let depth = try ColorDepth.validate(options.depth ?? configuration.defaultDepth)
        if let requested = options.display, !configuration.displayRange.contains(requested.number) {
            let range = configuration.displayRange
            throw DeskError(.invalidDisplay, "display \(requested) is out of range; use :\(range.lowerBound) to :\(range.upperBound).")
        }
        let account = try resolveAccount(options.user, caller: caller)
        let groups = limits.allowedGroups.filter { name in host.groupID(named: name).map { account.gid == $0 || account.groups.contains($0) } ?? false }
        try limits.checkAccount(.init(name: account.name, groups: groups))
        try admitByMemory(configuration)
        guard host.isExecutable(configuration.xvncPath) else {
            throw DeskError(.xvncMissing, "Xtigervnc is not installed at \(configuration.xvncPath); install it with: apt-get install tigervnc-standalone-server.")
        }
        do { try host.prepareXSocketDirectory() } catch {
            throw DeskError(.internalError, "cannot prepare \(XSocketDirectory.path): \(error).")
        }
        let plan = ManagedSession.LaunchPlan(
            account: account, template: template, geometry: geometry, depth: depth,
            userXstartup: honoursUserXstartup, configuration: configuration
        )

        // Another X server can win a display between our look and Xvnc's own lock: then try the next.
        var tried: Set<Display> = []
        while true {
            let display = try await chooseDisplay(requested: options.display, skipping: tried, range: configuration.displayRange)
            let id = Self.newSessionID()
            let advertised: RFBEndpoint = configuration.vncExposure.usesTCP
                ? .tcp(port: display.rfbPort(base: configuration.vncExposure.portBase)) : .unixSocket(path: configuration.sessionDirectories.rfbSocket(for: display))
            let session = ManagedSession(record: SessionRecord(
                session: Session(
                    id: id, user: account.name, uid: account.uid, gid: account.gid, display: display, endpoint: advertised, pid: 0,
                    pidStartTicks: 0, executable: configuration.xvncPath, state: .starting, startedAt: Date(),
                    desktop: template.name, geometry: geometry, depth: depth
                ),
                directory: configuration.sessionDirectories.directory(for: id).path
            ), lifecycle: .starting, environment: environment)
            guard try await registry.claim(display, for: session, limits: limits) else {
                // A start that looked at the same moment claimed it first.
                if options.display != nil {
                    throw DeskError(.displayBusy, "display \(display) is in use: \(DisplayOccupancy.heldByDeskd.reason); pick another or leave out --display.")
                }
                tried.insert(display)
                continue
            }
            do {
                let started = try await session.launch(plan, timings: timings)
                logger.info("session started", metadata: started.logMetadata.merging(["peer.uid": "\(caller.uid)"]) { $1 })
                return started
            } catch {
                guard case .displayTaken = error else {
                    if case .failed(let failure) = error { throw failure }
                    continue
                }
                tried.insert(display)
                logger.info("display taken by another X server; trying the next", metadata: ["session.display": "\(display)"])
                if options.display != nil || tried.count >= 8 {
                    throw DeskError(.displayBusy, "display \(display) was taken by another X server while starting; try again.")
                }
            }
        }
    }

    /// Refuses a start that would leave less memory available than `limits.memory_reserve`.
    /// Approximate on purpose: starts at the same moment read the same MemAvailable, and a
    /// desktop's real cost shows only as its user works.
    private func admitByMemory(_ configuration: DaemonConfiguration) throws(DeskError) {
        guard let reserve = configuration.memoryReserve, let available = host.memoryAvailable() else { return }
        let after = available - configuration.memoryPerSession
        guard after < reserve else { return }
        let size = ByteSize.text
        throw DeskError(.memoryLow, "a new desktop would leave \(size(max(0, after))) of memory available (\(size(available)) now, less limits.memory_per_session \(size(configuration.memoryPerSession))), under limits.memory_reserve \(size(reserve)); end an idle session (deskctl reap --idle) or ask an admin.")
    }

    /// The requested display, or the lowest usable one. Lock files are anyone's to plant, so
    /// the look at the host (listeners, then lock files from the lowest display up) runs off
    /// every actor; the registry's claim afterwards settles a race with another start.
    private func chooseDisplay(requested: Display?, skipping tried: Set<Display>, range: ClosedRange<Int>) async throws(DeskError) -> Display {
        let held = await registry.heldDisplays
        let portBase = configuration.vncExposure.rfbPortBase
        let host = self.host
        let choice = await onDedicatedThread { () -> Result<(Display, [(Display, String)]), DeskError> in
            let occupancy = host.displayOccupancy(in: range, rfbPortBase: portBase)
            var planted: [(Display, String)] = []
            return Result { () throws(DeskError) in
                let display = try DisplayAllocator(range: range).choose(requested: requested, skipping: tried) { display in
                    if held.contains(display) { return .heldByDeskd }
                    let found = occupancy(display)
                    if case .unusableLock(let what) = found { planted.append((display, what)) }
                    return found
                }
                // A stale lock (a dead server's) is cleared here too, for the same reason.
                host.reclaimStaleLock(display)
                return (display, planted)
            }
        }
        let (display, planted) = try choice.get()
        for (skipped, what) in planted {
            logger.notice("display skipped: its lock file is not an X server's", metadata: ["session.display": "\(skipped)", "lock": "\(what)"])
        }
        return display
    }

    private func resolveAccount(_ name: String?, caller: Caller) throws(DeskError) -> UserAccount {
        let account: UserAccount
        if let name {
            let found = try existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: found.uid) else {
                throw DeskError(.permissionDenied, "only an admin may start a desktop for another user (\(found.name)); leave out --user to start your own.")
            }
            account = found
        } else {
            guard caller.uid != 0 else {
                throw DeskError(.userNotAllowed, "deskd does not run desktops as root; name the user: deskctl start --user NAME.")
            }
            guard let found = host.account(uid: caller.uid) else {
                throw DeskError(.unknownUser, "your uid \(caller.uid) has no account on this host.")
            }
            account = found
        }
        try policy.checkDesktopAccount(name: account.name, uid: account.uid)
        if configuration.requireLoginShell, let problem = AccessPolicy.loginProblem(
            name: account.name, uid: account.uid, shell: account.shell, home: account.home, homeExists: host.isDirectory(account.home)) {
            throw problem
        }
        return account
    }

    /// The named account, or the one sentence every verb gives for a name that is not one.
    private func existingAccount(_ name: String) throws(DeskError) -> UserAccount {
        guard let account = host.account(named: name) else {
            throw DeskError(.unknownUser, "there is no user named '\(name)' on this host; check the name with: getent passwd \(name).")
        }
        return account
    }

    private static func newSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    // MARK: List, show, logs

    public func list(all: Bool, caller: Caller) async -> [Session] {
        await refresh()
        var sessions: [Session] = []
        for managed in await registry.all where all && caller.isAdmin || managed.uid == caller.uid {
            sessions.append(await managed.session)
        }
        return sessions
    }

    /// The session on `display`, if the caller may see it.
    func session(on display: Display, caller: Caller, action: String) async throws(DeskError) -> ManagedSession {
        guard let managed = await registry.session(on: display) else {
            throw DeskError(.noSuchSession, "there is no deskd session on display \(display); see the running ones with deskctl list.")
        }
        guard policy.mayAct(caller, onSessionOf: managed.uid) else { throw AccessPolicy.notYours(display, action: action) }
        return managed
    }

    public func show(_ display: Display, caller: Caller) async throws(DeskError) -> Session {
        try await session(on: display, caller: caller, action: "see").session
    }

    /// Whose session runs on `display`, for the audit trail (no access check: it is not returned to the caller).
    func owner(of display: Display) async -> (user: String, uid: UInt32)? {
        await registry.session(on: display).map { ($0.user, $0.uid) }
    }

    /// The end of a session's output and how its processes ended, for its owner and admins: the
    /// running session on a display, else the one that ended there last, or any kept one by id.
    func logs(_ target: LogsTarget, lines: Int, caller: Caller) async throws(DeskError) -> SessionLogs {
        if let refusal = logReaders.withLock({ $0.enter(uid: caller.uid) }) { throw refusal }
        defer { logReaders.withLock { $0.leave(uid: caller.uid) } }
        let archive = environment.archive
        var running: String?
        if case .display(let display) = target { running = await registry.session(on: display)?.record.logDirectory }
        let found: (summary: SessionSummary, path: String)? = await onDedicatedThread { [running] in
            switch target {
            case .session(let id):
                return archive.path(of: id).flatMap { path in archive.summary(in: path).map { ($0, path) } }
            case .display(let display):
                if let running, let summary = archive.summary(in: running) { return (summary, running) }
                return archive.newest(on: display)
            }
        }
        guard let found else {
            throw DeskError(.noSuchSession, "deskd keeps no logs for \(target.description); logs are kept for running sessions and each user's last \(configuration.keptSessionLogs) ended ones (see deskctl history).")
        }
        // The account as it was when the session ran: a uid handed to a new account since does not inherit the logs.
        guard caller.isAdmin || (found.summary.uid == caller.uid && found.summary.user == caller.userName) else {
            throw DeskError(.permissionDenied, "the logs of \(target.description) belong to another user's session; only its owner or an admin may read them.")
        }
        let count = min(max(lines, 1), SessionLogs.maxLines)
        return await onDedicatedThread { archive.logs(of: found.summary, in: found.path, lines: count, bytes: SessionLogs.maxReplyBytes) }
    }

    // MARK: Kill, reap

    func kill(_ target: KillTarget, caller: Caller) async throws(DeskError) -> [Session] {
        let targets: [ManagedSession]
        switch target {
        case .display(let display):
            targets = [try await session(on: display, caller: caller, action: "kill")]
        case .user(let name):
            let account = try existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: account.uid) else {
                throw DeskError(.permissionDenied, "only an admin may kill another user's (\(account.name)) sessions.")
            }
            targets = await registry.all.filter { $0.uid == account.uid }
        case .all:
            targets = await registry.all.filter { policy.mayAct(caller, onSessionOf: $0.uid) }
        }
        var sessions: [(ManagedSession, Session)] = []
        for managed in targets {
            let session = await managed.session
            logger.info("session kill requested", metadata: session.logMetadata.merging(["peer.uid": "\(caller.uid)"]) { $1 })
            sessions.append((managed, session))
        }
        return await endAll(sessions, .killed(by: caller.displayName))
    }

    /// How many teardowns run at once in a kill or a reap of many sessions.
    static let teardownsAtOnce = 64

    /// Ends `sessions`, a few at a time: a teardown mostly waits (for SIGTERM to land, for the
    /// cgroup to empty, for deskd-session to close the login), so one after another would add
    /// those waits up, some tens of milliseconds a session. Returns them as ended, in order.
    private func endAll(_ sessions: [(ManagedSession, Session)], _ cause: EndCause) async -> [Session] {
        await withTaskGroup(of: Void.self) { group in
            for (index, (managed, _)) in sessions.enumerated() {
                if index >= Self.teardownsAtOnce { await group.next() }
                group.addTask { await managed.end(cause) }
            }
        }
        return sessions.map { _, session in
            var ended = session
            ended.state = .exited
            return ended
        }
    }

    /// Ends the sessions without a viewer for at least the idle time (or, dry, just names them).
    func reap(_ options: ReapOptions, caller: Caller, now: Date = Date()) async throws(DeskError) -> [Session] {
        var uid: UInt32?
        if let name = options.user {
            let account = try existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: account.uid) else {
                throw DeskError(.permissionDenied, "only an admin may reap another user's (\(account.name)) sessions.")
            }
            uid = account.uid
        }
        await refresh(now: now)
        var idle: [(ManagedSession, Session)] = []
        for managed in await registry.all where policy.mayAct(caller, onSessionOf: managed.uid) && (uid == nil || managed.uid == uid) {
            let session = await managed.session
            if [.ready, .unresponsive].contains(session.state), session.clients == 0, session.idleSeconds >= options.idleSeconds {
                idle.append((managed, session))
            }
        }
        if options.dryRun { return idle.map(\.1) }
        for (_, session) in idle {
            logger.info("reaping idle session", metadata: session.logMetadata.merging(["session.idleSeconds": "\(session.idleSeconds)", "peer.uid": "\(caller.uid)"]) { $1 })
        }
        return await endAll(idle, caller.pid == getpid() ? .idleLimit : .reaped(by: caller.displayName))
    }

    /// Applies the configured idle limit, as root would with `deskctl reap --idle`.
    public func enforceIdleLimit() async {
        guard let limit = configuration.idleLimitSeconds else { return }
        let daemon = Caller(uid: 0, gid: 0, pid: getpid(), userName: "deskd", isAdmin: true)
        _ = try? await reap(ReapOptions(idleSeconds: limit), caller: daemon)
    }

    // MARK: Probe, passwd

    public func probe(_ display: Display, timeoutSeconds: Int, caller: Caller) async throws(DeskError) -> ProbeReport {
        let managed = try await session(on: display, caller: caller, action: "see")
        let report = try await managed.probe(timeout: .seconds(min(max(timeoutSeconds, 1), 30)))
        await refresh()
        return report
    }

    /// A new password (or view-only password), and with it every link and browser the old one
    /// let in taken back: a view-only password takes back the view-only ones only.
    public func rotatePassword(_ display: Display, viewOnly: Bool, caller: Caller) async throws(DeskError) -> (Session, LinkRevocation) {
        let managed = try await session(on: display, caller: caller, action: "change the password of")
        let session = try await managed.rotatePassword(viewOnly: viewOnly)
        let revoked = revokeLinks(of: managed.id, on: display, viewOnlyOnly: viewOnly)
        logger.info(viewOnly ? "session view-only password set" : "session password rotated", metadata: session.logMetadata.merging([
            "peer.uid": "\(caller.uid)", "links.revoked": "\(revoked.links)", "browsers.closed": "\(revoked.browsers)",
        ]) { $1 })
        return (session, revoked)
    }

    // MARK: Browser links

    /// `deskctl url --revoke`: every unused link to the session on `display` opens nothing from
    /// now on, and every browser connected to it is closed; for its owner or an admin.
    func revokeLinks(_ display: Display, caller: Caller) async throws(DeskError) -> LinkRevocation {
        let managed = try await session(on: display, caller: caller, action: "take back the links of")
        let revoked = revokeLinks(of: managed.id, on: display, viewOnlyOnly: false)
        let session = await managed.session
        logger.info("session links revoked", metadata: session.logMetadata.merging([
            "peer.uid": "\(caller.uid)", "links.revoked": "\(revoked.links)", "browsers.closed": "\(revoked.browsers)",
        ]) { $1 })
        return revoked
    }

    /// Links first, so no browser that is closed can come straight back through one of them.
    private func revokeLinks(of sessionID: String, on display: Display, viewOnlyOnly: Bool) -> LinkRevocation {
        let links = environment.links.revoke(sessionID: sessionID, viewOnlyOnly: viewOnlyOnly)
        let browsers = environment.browsers.disconnect(sessionID: sessionID, viewOnlyOnly: viewOnlyOnly)
        return LinkRevocation(display: display, links: links, browsers: browsers, viewOnlyOnly: viewOnlyOnly)
    }

    /// A one-time link that opens the session on `display` in a browser through the gateway,
    /// for its owner or an admin, usable once within `ttlSeconds`.
    func browserLink(_ display: Display, viewOnly: Bool, ttlSeconds: Int, hostName: String, caller: Caller) async throws(DeskError) -> BrowserLink {
        let base = try browserLinkBase(ttlSeconds: ttlSeconds, hostName: hostName, example: "deskctl url \(display) --ttl 10m")
        let managed = try await session(on: display, caller: caller, action: "open in a browser")
        return try await browserLink(to: managed, base: base, viewOnly: viewOnly, ttlSeconds: ttlSeconds, caller: caller)
    }

    /// The link itself, to this very session (not to whatever holds its display by now).
    private func browserLink(to managed: ManagedSession, base: String, viewOnly: Bool, ttlSeconds: Int, caller: Caller) async throws(DeskError) -> BrowserLink {
        let session = await managed.session
        let display = session.display
        try checkGatewayCanLogIn(to: session.rfbSocket == nil)
        guard await managed.isRunning else {
            throw DeskError(.noSuchSession, "the session on \(display) is \(session.state.rawValue); a link is for a running session (see deskctl list).")
        }
        let token = try environment.links.mint(.init(sessionID: managed.id, display: display, owner: session.uid, issuedTo: caller.uid, viewOnly: viewOnly),
                                               ttl: .seconds(ttlSeconds))
        return BrowserLink(display: display, url: base + "/open#token=" + token,
                           expiresAt: Date().addingTimeInterval(Double(ttlSeconds)), viewOnly: viewOnly)
    }

    /// The gateway logs in to Xvnc with the session's password: over TCP, Xvnc must offer
    /// VncAuth (a session's Unix socket always does).
    private func checkGatewayCanLogIn(to tcpSession: Bool) throws(DeskError) {
        guard tcpSession, !configuration.vncExposure.allowsPasswordProbe else { return }
        throw DeskError(.gatewayOff, "desktops here offer viewers only \(configuration.vncExposure.securityTypes.joined(separator: ", ")) (network.security_types), and the gateway logs in with VncAuth; add \"VncAuth\" there, or use a native viewer.")
    }

    /// Where links start, once the gateway is on and the TTL is one a link may have; what
    /// `start --web` checks before it starts anything.
    func browserLinkBase(ttlSeconds: Int, hostName: String, example: String) throws(DeskError) -> String {
        let configuration = self.configuration
        guard let base = configuration.web.baseURL(hostName: hostName) else {
            throw DeskError(.gatewayOff, "the browser gateway is off on this host; an admin turns it on with listen in the [web] section of \(configuration.configurationFile ?? ConfigurationFile.defaultPath).")
        }
        guard (1...BrowserLink.maximumTTLSeconds).contains(ttlSeconds) else {
            throw DeskError(.invalidDuration, "a link may wait from 1s to 24h for its use, not \(ttlSeconds)s; for example: \(example).")
        }
        return base
    }

    /// A start that also hands out a browser link: refused before anything starts if no link
    /// could be made, so the caller never gets half of what they asked for.
    func startForBrowser(_ options: StartOptions, ttlSeconds: Int, hostName: String, caller: Caller) async throws(DeskError) -> (Session, BrowserLink?) {
        let base = try browserLinkBase(ttlSeconds: ttlSeconds, hostName: hostName, example: "deskctl start --web --ttl 10m")
        try checkGatewayCanLogIn(to: configuration.vncExposure.usesTCP)
        try environment.links.checkRoom(for: caller.uid)
        let session = try await start(options, caller: caller)
        // The desktop is running either way. The link is to the session just started, found by
        // its id: if it has already ended, its display may be someone else's by now.
        guard let managed = await registry.session(id: session.id) else { return (session, nil) }
        let link = try? await browserLink(to: managed, base: base, viewOnly: false, ttlSeconds: ttlSeconds, caller: caller)
        return (session, link)
    }

    // MARK: Metrics

    /// Every metric, as Prometheus reads it (`deskctl metrics`, `[metrics] listen`). Viewer
    /// counts are the monitor's, at most a second old: a scrape, which anyone who reaches the
    /// listener may send, costs a look at each session and never a census of the host.
    public func metricsText() async -> String {
        var byState: [SessionState: Int] = [:]
        var native = 0, browsers = 0
        let sessions = await registry.all
        for managed in sessions {
            let session = await managed.session
            byState[session.state, default: 0] += 1
            // A browser's relay is one of Xvnc's connections, so the census counted it too;
            // the two are read a moment apart, hence the floor, per session.
            let relayed = environment.browsers.count(sessionID: managed.id)
            browsers += relayed
            native += max(0, session.clients - relayed)
        }
        let free = await freeDisplayCount(configuration)
        return environment.metrics.text(with: .init(
            sessionsByState: byState,
            nativeViewers: native, browserViewers: browsers,
            freeDisplays: free,
            outstandingLinks: environment.links.outstanding(),
            listeners: environment.listeners.all,
            residentBytes: ProcFS.ownResidentBytes()
        ))
    }

    /// Displays in the configured range that no deskd session holds (X servers deskd did not
    /// start are not looked for: that would be a look at every display's lock).
    private func freeDisplayCount(_ configuration: DaemonConfiguration) async -> Int {
        max(0, configuration.displayRange.count - (await registry.heldDisplays.count))
    }

    // MARK: Viewers, foreign displays

    /// Updates viewer counts, idle times and health from the kernel (`ViewerCensus`). The census
    /// runs off every actor, so however many sockets the host holds, requests are not held up;
    /// its answer is applied by session id, to the sessions still there when it comes back.
    /// Cheap enough to run every second.
    /// Counts every session's viewers; `health` (the monitor's census each second) also reads
    /// each Xvnc's state, which a reader's refresh leaves as the last census found it.
    public func refresh(now: Date = Date(), health: Bool = false) async {
        let sessions = await registry.all
        guard !sessions.isEmpty else { return }
        var subjects: [ViewerCensus.Subject] = []
        for managed in sessions {
            if let subject = await managed.censusSubject { subjects.append(subject) }
        }
        let host = self.host, socketDirectory = configuration.runtimeDirectory
        let counts = await onDedicatedThread { [subjects] in host.viewerCensus(subjects, socketDirectory: socketDirectory, health: health) }
        for managed in sessions {
            if let count = counts[managed.id] { await managed.apply(count, now: now) }
        }
    }

    /// Displays in range held by X servers deskd did not start: never touched, never allocated over.
    public func foreignDisplays(caller: Caller) async -> [ForeignDisplay] {
        guard caller.isAdmin else { return [] }
        let range = configuration.displayRange
        let held = await registry.heldDisplays
        let host = self.host, portBase = configuration.vncExposure.rfbPortBase
        return await onDedicatedThread {
            let occupancy = host.displayOccupancy(in: range, rfbPortBase: portBase)
            return range.map(Display.init).compactMap { display in
                guard !held.contains(display) else { return nil }
                let found = occupancy(display)
                guard !found.isUsable else { return nil }
                var pid: Int32?
                if case .liveLock(let owner) = found, owner > 0 { pid = owner }
                return ForeignDisplay(display: display, reason: found.reason, pid: pid)
            }
        }
    }
}
