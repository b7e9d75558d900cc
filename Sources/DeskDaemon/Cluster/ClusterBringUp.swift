import DeskCluster
import DeskCore
import DeskLinux
import FoundationEssentials
import Logging

/// Carries out a cluster desktop's `LaunchPlan`: gives it a display number on this host as its
/// handle (what `deskctl kill :N` and `url :N` name; nothing runs on it here), submits its job as
/// the user with everything the node needs in the job's script, and waits a while for the job to
/// report its desktop ready. The desktop itself, Xvnc and the relay are the job's (deskd-job).
struct ClusterBringUp: Sendable {
    let plan: LaunchPlan
    let options: SlurmOptions
    let environment: SessionEnvironment

    private var configuration: DaemonConfiguration { plan.configuration }

    func start() async throws(DeskError) -> Session {
        var tried: Set<Display> = []
        while true {
            let display = try await chooseHandle(skipping: tried)
            let session = ManagedSession(record: newRecord(on: display), lifecycle: .starting, environment: environment)
            // The host's own caps are for desktops on this host; cluster ones are capped per user by admission.
            var limits = configuration.limits
            limits.maxSessions = nil
            limits.maxSessionsPerUser = nil
            guard try await environment.registry.claim(display, for: session, limits: limits) else {
                tried.insert(display)
                continue
            }
            try await session.launchCluster(self)
            await session.awaitReady(within: configuration.slurm.startWait)
            var reply = await session.session
            guard reply.state != .exited, reply.state != .stopping else {
                // Killed while it waited: answered as a kill during any start is. Else the end's
                // reason (Slurm's state, the job's own words), not the job's last state seen.
                let cause = await session.endCause
                if case .killed? = cause { throw ManagedSession.killedWhileStarting(display) }
                throw DeskError(.desktopExited, "the desktop's Slurm job \(reply.slurm?.jobId ?? "") ended before its desktop was ready: \((cause?.reason ?? reply.slurm?.state ?? "ended").trimming(where: { $0 == "." })); see deskctl history.")
            }
            // A server on the job's owner-only socket (wayvnc) asks no password: there is none to show.
            reply.password = reply.server.viewerAccess == .password ? await session.record.cluster?.password : nil
            return reply
        }
    }

    /// The lowest display of the range no session of deskd's holds: a name, not an X server.
    private func chooseHandle(skipping tried: Set<Display>) async throws(DeskError) -> Display {
        let held = await environment.registry.heldDisplays
        guard let free = configuration.displayRange.map(Display.init).first(where: { !held.contains($0) && !tried.contains($0) }) else {
            throw DeskError(.noFreeDisplay, "every display of the range (:\(configuration.displayRange.lowerBound) to :\(configuration.displayRange.upperBound)) names a desktop already; end one (deskctl reap --idle) or ask an admin.")
        }
        return free
    }

    private func newRecord(on display: Display) -> SessionRecord {
        var session = Session(
            id: SessionBringUp.newSessionID(), user: plan.account.name, uid: plan.account.uid, gid: plan.account.gid, display: display,
            endpoint: .unixSocket(path: ""), pid: 0, pidStartTicks: 0, executable: configuration.xvncPath, state: .queued, startedAt: Date(),
            desktop: plan.template.name, geometry: plan.geometry, depth: plan.depth
        )
        session.rfbSocket = nil
        session.displayServer = type(of: plan.server).kind
        var record = SessionRecord(session: session)
        record.cluster = ClusterRecord(key: HopAuthenticator.newKey(), password: SessionPassword.generate(),
                                       viewOnlyPassword: SessionPassword.generate())
        return record
    }

    /// Submits the job, on the session's actor: the key is accepted from before sbatch runs
    /// (a job can report within a second of it), and the job is the session's from its id on.
    func submit(on session: isolated ManagedSession) async throws(DeskError) {
        guard let cluster = session.record.cluster, let listen = configuration.slurm.listen else {
            throw DeskError(.slurmOff, "this deskd submits no desktops to Slurm.")
        }
        let account = plan.account, settings = configuration.slurm
        let xstartup: String
        do {
            xstartup = XstartupTemplate.sessionScript(try plan.template.render([
                "user": account.name, "home": account.home, "display": session.display.description,
                "geometry": plan.geometry.description, "desktop": plan.template.name, "session_dir": "",
            ]), preferringUserXstartup: false)
        } catch { throw error }
        let spec = JobSpec(
            session: session.id, key: cluster.key, password: cluster.password, viewOnlyPassword: cluster.viewOnlyPassword,
            report: "\(listen.host):\(listen.port)", xvnc: configuration.xvncPath,
            xvncOptions: Xvnc.policyArguments(configuration.displayServerPolicy),
            xstartup: xstartup, desktop: plan.template.name, geometry: plan.geometry.description, depth: plan.depth,
            warnSeconds: settings.warnBeforeSeconds, server: plan.server
        )
        let submission = SlurmSubmission(options: options, warnSeconds: settings.warnBeforeSeconds, directory: account.home,
                                         jobProgram: settings.jobProgram, spec: spec)
        guard let key = cluster.keyBytes else { throw DeskError(.internalError, "the session's hop key is damaged.") }
        session.clusterHub.register(session: session.id, key: key)
        let scheduler = environment.cluster.scheduler, user = account.name
        // sbatch: Slurm answers when it answers (seconds on a busy controller).
        let jobID = try await onDedicatedThread { scheduler.submit(submission, user: user) }.get()
        session.footprint.insert(.job)
        session.record.session.slurm = SlurmJob(jobId: jobID, partition: options.partition, state: "PENDING", timeLimit: options.time)
        session.persist()
        environment.logger.info("cluster desktop submitted", metadata: session.record.session.logMetadata.merging([
            "slurm.jobId": "\(jobID)", "slurm.partition": "\(options.partition ?? "default")", "slurm.time": "\(options.time ?? "default")",
        ]) { $1 })
    }
}
