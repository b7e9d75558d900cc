import DeskCore
import DeskFrontProtocol
import DeskGatewayMetrics
import DeskHost
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
    private let startRate: Mutex<CallerRateLimiter?>
    /// Credential changes per user a minute. Each is always in the audit trail (no rate limit
    /// may drop one), so they are limited here instead: a loop of them could otherwise rotate
    /// the trail's real entries out. Admins are not limited.
    private let credentialRate = Mutex(CallerRateLimiter(perMinute: SessionService.credentialChangesPerMinute,
                                                         what: "links, shares taken back, password changes and extensions",
                                                         rule: "deskd"))
    static let credentialChangesPerMinute = 60
    /// sinfo's last answer and when: the start form and cluster starts read the partitions from
    /// here for `partitionsFresh`, so a flood of `desktops` requests is not a flood of sinfo.
    private let partitionCache = Mutex<(at: ContinuousClock.Instant, partitions: [SlurmPartition])?>(nil)
    static let partitionsFresh: Duration = .seconds(30)
    private let startedAt = Date()

    var host: any HostSystem { environment.host }
    var registry: SessionRegistry { environment.registry }
    var logger: Logger { environment.logger }
    var audit: AuditTrail { environment.audit }
    /// What sessions start on their own (exit handling, late desktops), for the service group to run.
    public var tasks: SessionTasks { environment.tasks }
    /// The configuration now in force.
    var configuration: DaemonConfiguration { environment.configuration.value }

    public convenience init(configuration: DaemonConfiguration, logger: Logger) throws {
        try self.init(configuration: configuration, host: LinuxHost(), logger: logger)
    }

    public convenience init(configuration: DaemonConfiguration, host: any HostSystem, logger: Logger) throws {
        try self.init(configuration: configuration, host: host, scheduler: SlurmCommands(directory: configuration.slurm.commandDirectory), logger: logger)
    }

    init(configuration: DaemonConfiguration, host: any HostSystem, scheduler: any SlurmScheduler, logger: Logger) throws {
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
            gatewayMetrics: GatewayMetrics(factory: metrics.factory),
            metrics: metrics,
            listeners: SideListenerBoard(factory: metrics.factory),
            tasks: SessionTasks(),
            cluster: ClusterContext(hub: ClusterHub(logger: logger), scheduler: scheduler)
        )
        self.startRate = Mutex(configuration.startsPerMinute.map { CallerRateLimiter(perMinute: $0) })
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

    var policy: AccessPolicy { AccessPolicy(minimumUID: configuration.minimumUID) }

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
            startRate.withLock { $0 = new.startsPerMinute.map { CallerRateLimiter(perMinute: $0) } }
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

    /// Whether the admin group names a group of this host (if not, only root administers).
    public var adminGroupExists: Bool { host.groupID(named: adminGroup) != nil }

    /// The uid of the account `name`, if there is one (for the audit trail).
    func uid(ofUser name: String) -> UInt32? { host.account(named: name)?.uid }

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
            .catalog(defaultDesktop: configuration.defaultDesktop, path: configuration.sessionPath, isExecutable: host.isExecutable,
                     isFile: host.isFile)
    }

    /// What a cluster start may ask for, with the partitions as sinfo has them now; nil where
    /// this host submits no desktops to Slurm.
    func clusterChoices() async -> ClusterChoices? {
        let settings = configuration.slurm
        guard settings.isEnabled else { return nil }
        return settings.choices(partitions: await clusterPartitions())
    }

    /// The cluster's partitions, from sinfo at most every `partitionsFresh` (nil: sinfo did not answer).
    func clusterPartitions(now: ContinuousClock.Instant = .now) async -> [SlurmPartition]? {
        if let cached = partitionCache.withLock({ $0 }), now - cached.at < Self.partitionsFresh { return cached.partitions }
        let scheduler = environment.cluster.scheduler
        // sinfo: Slurm answers when it answers.
        guard let partitions = await onDedicatedThread({ scheduler.partitions() }) else { return nil }
        partitionCache.withLock { $0 = (now, partitions) }
        return partitions
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
        for var record in loaded {
            // A record's cgroup is one deskd made for that session id, or none: the teardown
            // kills everything in it and removes it, so no other path is taken from a file.
            if let cgroup = record.cgroup, cgroup != host.cgroupPath(for: record.session.id) {
                logger.warning("session record names a cgroup deskd did not make for it; ignoring it", metadata: record.session.logMetadata.merging(["record.cgroup": "\(cgroup)"]) { $1 })
                record.cgroup = nil
            }
            if record.cluster != nil {
                // Its job runs on a node, or ran: squeue will say which, within a poll.
                let lifecycle: ManagedSession.Lifecycle = record.cluster?.port != nil ? .ready : .starting
                let session = ManagedSession(record: record, lifecycle: lifecycle, environment: environment)
                if (try? await registry.claim(record.session.display, for: session, limits: limits)) ?? false {
                    await session.adoptCluster()
                    logger.info("cluster desktop adopted", metadata: record.session.logMetadata.merging(["slurm.jobId": "\(record.session.slurm?.jobId ?? "?")"]) { $1 })
                } else {
                    logger.warning("a cluster desktop's record names a display another record holds; dropping it", metadata: record.session.logMetadata)
                    environment.store.remove(sessionID: record.session.id)
                }
                continue
            }
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
        await onBlockingPool { archive.pruneAll(keep: keep, live: live) }
    }

    /// Counts a credential change (`url`, `url --revoke`, `passwd`, `extend`) of a user who is no
    /// admin, or refuses it with a sentence when they have made `credentialChangesPerMinute`.
    func admitCredentialChange(caller: Caller) throws(DeskError) {
        guard !caller.isAdmin else { return }
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        try credentialRate.withLock { rate throws(DeskError) in try rate.admit(uid: caller.uid, now: now) }
    }

    // MARK: Start

    /// `start`: admitted (`StartAdmission`), then brought up on the host (`SessionBringUp`).
    /// Root is not rate-limited: it could start Xvnc by hand anyway, and benchmarks start forty at once.
    func start(_ request: StartRequest, caller: Caller) async throws(DeskError) -> Session {
        let began = ContinuousClock.now
        do {
            if caller.uid != 0 {
                let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
                try startRate.withLock { rate throws(DeskError) in try rate?.admit(uid: caller.uid, now: now) }
            }
            var facts = AdmissionFacts(host: host)
            if request.slurm != nil, configuration.slurm.isEnabled {
                let partitions = await clusterPartitions()
                facts.partitions = { partitions }
            }
            let admission = StartAdmission(configuration: configuration, facts: facts, registry: await registry.snapshot)
            let plan = try admission.admit(request, caller: caller)
            let session = if let options = plan.slurm {
                try await ClusterBringUp(plan: plan, options: options, environment: environment).start()
            } else {
                try await SessionBringUp(plan: plan, environment: environment).start(timings: StartTimings())
            }
            logger.info("session started", metadata: session.logMetadata.merging(["peer.uid": "\(caller.uid)"]) { $1 })
            environment.metrics.sessionStarted(after: .now - began)
            return session
        } catch {
            environment.metrics.startFailed(error.code)
            throw error
        }
    }

    /// The named account, or the one sentence every verb gives for a name that is not one.
    func existingAccount(_ name: String) throws(DeskError) -> UserAccount {
        guard let account = host.account(named: name) else { throw StartAdmission.unknownUser(name) }
        return account
    }

    // MARK: List, show, logs

    public func list(all: Bool, caller: Caller) async -> [Session] {
        let now = Date()
        await refresh(now: now)
        return await registry.all.filter { all && caller.isAdmin || $0.uid == caller.uid }.map { $0.shownSession(at: now) }
    }

    /// The session on `display`, if the caller may see it.
    func session(on display: Display, caller: Caller, action: String) async throws(DeskError) -> ManagedSession {
        guard let managed = await registry.session(on: display) else {
            throw DeskError(.noSuchSession, "there is no deskd session on display \(display); see the running ones with deskctl list.")
        }
        guard policy.mayAct(caller, onSessionOf: managed.uid) else { throw AccessPolicy.notYours(display, action: action) }
        return managed
    }

    /// `extend`: a cluster desktop's time limit made longer, by its owner or an admin, within
    /// [slurm] extend_max in all.
    func extend(_ display: Display, bySeconds seconds: Int, caller: Caller) async throws(DeskError) -> Session {
        let managed = try await session(on: display, caller: caller, action: "extend")
        let limit = configuration.slurm.extendMaxSeconds
        guard limit > 0 || !managed.isCluster else {
            throw DeskError(.permissionDenied, "this site does not let desktops be made longer ([slurm] extend_max is 0s); start a new one with a longer --time.")
        }
        return try await managed.extendJob(bySeconds: seconds, limit: limit, scheduler: environment.cluster.scheduler)
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
    func logs(_ request: LogsRequest, caller: Caller) async throws(DeskError) -> SessionLogs {
        if let refusal = logReaders.withLock({ $0.enter(uid: caller.uid) }) { throw refusal }
        defer { logReaders.withLock { $0.leave(uid: caller.uid) } }
        let archive = environment.archive, target = request.target
        var running: String?
        if case .display(let display) = target { running = await registry.session(on: display)?.record.logDirectory }
        let found: (summary: SessionSummary, path: String)? = await onBlockingPool { [running] in
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
        let lines = request.lines
        return await onBlockingPool { archive.logs(of: found.summary, in: found.path, lines: lines, bytes: SessionLogs.maxReplyBytes) }
    }
}
