@testable import DeskDaemon
import DeskCore
import DeskWeb
import DeskLinux
import Foundation
import Logging
import Testing

/// The daemon's decisions about cluster desktops (`start --slurm`), under a fake host and a fake
/// Slurm (FakeScheduler): what it submits and as whom, how a session follows what its job
/// reports and what squeue says, how it ends and what it cancels, what a restarted deskd takes
/// back. The report listener is not started: a job's reports are handed to the session as
/// ClusterHub hands them over after the handshake.
@Suite struct ClusterServiceTests {
    /// A service with `[slurm] listen` set (nothing listens there in these tests), its records,
    /// logs and audit trail in a temporary directory.
    struct Desk {
        let host: FakeHost
        let scheduler: FakeScheduler
        let service: SessionService
        let harness: ControlHarness
        let configuration: DaemonConfiguration
        /// Runs what sessions start on their own (an end squeue or a report calls for), as deskd's service group does.
        let tasks: Task<Void, Never>

        init(host: FakeHost = FakeHost(), scheduler: FakeScheduler = FakeScheduler(), root: String? = nil, slurm: Bool = true,
             configure: (inout DaemonConfiguration) -> Void = { _ in }) throws {
            let root = root ?? FileManager.default.temporaryDirectory.appendingPathComponent("deskd-cluster-\(UUID())").path
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            var configuration = DaemonConfiguration()
            configuration.runtimeDirectory = root + "/run"
            configuration.stateDirectory = root + "/state"
            configuration.templateDirectories = [SessionServiceTests.Daemon.templates]
            configuration.xvncPath = FakeHost.xvnc
            configuration.killGrace = .milliseconds(50)
            configuration.startsPerMinute = nil
            if slurm {
                configuration.slurm.listen = ListenAddress(host: "127.0.0.1", port: 7010)
                configuration.slurm.partition = "batch"
                configuration.slurm.startWait = .milliseconds(200)
            }
            configure(&configuration)
            self.host = host
            self.scheduler = scheduler
            self.configuration = configuration
            self.service = try SessionService(configuration: configuration, host: host, scheduler: scheduler, logger: SessionServiceTests.Daemon.logger)
            self.harness = ControlHarness(service: service, logger: SessionServiceTests.Daemon.logger)
            self.tasks = Task { [service] in try? await service.tasks.run() }
        }

        /// Another deskd on the same host, state and Slurm, as after a restart.
        func restarted() throws -> Desk {
            try Desk(host: host, scheduler: scheduler, root: URL(fileURLWithPath: configuration.stateDirectory).deletingLastPathComponent().path) {
                $0 = configuration
            }
        }

        func start(_ caller: Caller, for user: String? = nil, _ options: SlurmOptions = SlurmOptions()) async throws -> Session {
            try await service.start(StartRequest(user: user, slurm: options), caller: caller)
        }

        func send(_ request: Request, as caller: Caller) async throws -> Response {
            let bytes = Array(try JSONEncoder.desk.encode(request))
            return await harness.handle(bytes, from: PeerCredentials(pid: caller.pid, uid: caller.uid, gid: caller.gid))
        }

        func managed(_ id: String) async throws -> ManagedSession {
            try #require(await service.registry.session(id: id))
        }

        /// The session as `list` shows it, without a census.
        func shown(_ id: String) async throws -> Session {
            try await managed(id).session
        }

        /// The session's record as a restarted deskd would read it; nil if there is none.
        func record(of id: String) throws -> SessionRecord? {
            let path = configuration.sessionRecordsDirectory + "/\(id).json"
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            return try JSONDecoder.desk.decode(SessionRecord.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        }

        var recordFiles: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: configuration.sessionRecordsDirectory)) ?? []).filter { $0.hasSuffix(".json") }
        }

        var auditTrail: [AuditEntry] {
            get throws {
                let text = (try? String(contentsOfFile: configuration.auditLogPath, encoding: .utf8)) ?? ""
                return try text.split(separator: "\n").map { try JSONDecoder.desk.decode(AuditEntry.self, from: Data($0.utf8)) }
            }
        }

        /// Why the session ended, as `history` says it; nil while it has not.
        func endReason(of id: String) throws -> String? {
            try auditTrail.last { $0.command == .ended && $0.detail == "session=\(id)" }?.outcome
        }

        /// Waits (the end is spawned on `service.tasks`) until the session is gone; false if it stays.
        func ended(_ id: String) async -> Bool {
            await ClusterServiceTests.eventually { await service.registry.session(id: id) == nil }
        }

        func remove() {
            tasks.cancel()
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: configuration.stateDirectory).deletingLastPathComponent().path)
        }
    }

    static let root = SessionServiceTests.root
    static let alice = SessionServiceTests.alice
    static let bob = SessionServiceTests.bob

    /// What deskd-job says once the desktop answers on its node.
    static let ready = JobReport(event: .ready, node: "node1", address: "10.77.0.11", port: 41234, display: 5,
                                 socket: "/tmp/.X11-unix/X5")

    /// True as soon as `condition` holds, false if it does not within `limit`.
    /// Generous, as a shared machine under load may stall a test for seconds; a condition that
    /// holds returns at once.
    static func eventually(within limit: Duration = .seconds(30), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return try await condition()
    }

    /// The spec deskd-job would read from the job's script (its here-document's one line).
    static func spec(in script: String) throws -> JobSpec {
        let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("{") })
        return try JobSpec.decode(Array(line.utf8))
    }

    // MARK: Admission

    @Test func startSlurmIsRefusedWhereListenIsUnset() async throws {
        let desk = try Desk(slurm: false)
        defer { desk.remove() }
        await #expect { try await desk.start(Self.alice) } throws: { error in
            (error as? DeskError)?.code == .slurmOff && (error as? DeskError)?.message
                == "this deskd submits no desktops to Slurm; an admin turns that on with listen in the [slurm] section of /etc/deskd/deskd.toml, or leave out --slurm for a desktop on this host."
        }
        let reply = try await desk.send(Request(command: .start, slurm: SlurmOptions()), as: Self.alice)
        #expect(reply.error?.code.rawValue == "slurm-off")
        #expect(desk.scheduler.submissions.isEmpty)
        #expect(await desk.service.registry.isEmpty)
    }

    @Test func theCapCountsQueuedDesktopsAndAnAdminsStartsForTheUser() async throws {
        // The host's own per-user cap is for desktops on this host: it does not stop a second cluster one.
        let desk = try Desk { $0.slurm.maxPerUser = 2; $0.limits.maxSessionsPerUser = 1 }
        defer { desk.remove() }
        let first = try await desk.start(Self.alice)
        let second = try await desk.start(Self.root, for: "alice")
        #expect([first.state, second.state] == [.queued, .queued])
        let sentence = "alice has 2 cluster desktops already, the most [slurm] max_per_user allows; end one first (deskctl list, then deskctl kill :N)."
        await #expect { try await desk.start(Self.alice) } throws: { error in
            (error as? DeskError)?.code == .limitReached && (error as? DeskError)?.message == sentence
        }
        await #expect { try await desk.start(Self.root, for: "alice") } throws: { error in
            (error as? DeskError)?.code == .limitReached && (error as? DeskError)?.message == sentence
        }
        // Bob's count is his own.
        let bobs = try await desk.start(Self.bob)
        #expect(desk.scheduler.submissions.map(\.user) == ["alice", "alice", "bob"])
        #expect(await desk.service.list(all: true, caller: Self.root).map(\.user) == ["alice", "alice", "bob"])
        #expect(bobs.display == Display(3))

        // One ended, alice may have another.
        _ = try await desk.service.kill(.display(first.display), caller: Self.alice)
        #expect(try await desk.start(Self.alice).display == first.display)
    }

    @Test func clusterDesktopsDoNotCountAgainstTheHostsOwnCaps() async throws {
        // The host's caps are for what runs on the host: alice's cluster desktop leaves her room
        // for one here, and the host's one place is still free.
        let desk = try Desk { $0.limits.maxSessionsPerUser = 1; $0.limits.maxSessions = 1 }
        defer { desk.remove() }
        let cluster = try await desk.start(Self.alice)
        #expect(cluster.slurm != nil)
        let local = try await desk.service.start(StartRequest(), caller: Self.alice)
        #expect(local.slurm == nil && local.display != cluster.display)
        await #expect { try await desk.service.start(StartRequest(), caller: Self.bob) } throws: { error in
            (error as? DeskError)?.code == .limitReached
        }
    }

    // MARK: Submission

    @Test func theJobIsSubmittedAsTheUserWithTheSpecInItsScriptAndNoKeyOnItsCommandLine() async throws {
        let desk = try Desk { $0.slurm.warnBeforeSeconds = 120 }
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        #expect(desk.scheduler.submissions.count == 1)
        let submitted = try #require(desk.scheduler.submissions.first)
        #expect(submitted.user == "alice")
        #expect(submitted.arguments == [
            "--parsable", "--job-name=deskd-desktop", "--nodes=1", "--ntasks=1", "--no-requeue", "--signal=B:USR1@120", "--export=NONE",
            "--chdir=/home/alice", "--output=/dev/null", "--error=/dev/null", "--partition=batch", "--time=4:00:00",
        ])
        #expect(submitted.script.hasPrefix("#!/bin/sh\n"))
        #expect(submitted.script.contains("\nexec '/usr/libexec/deskd/deskd-job' <<'DESKD_JOB_SPEC'\n"))

        let record = try #require(try desk.record(of: session.id))
        let cluster = try #require(record.cluster)
        let spec = try Self.spec(in: submitted.script)
        #expect(spec.session == session.id)
        #expect(spec.key == cluster.key && cluster.keyBytes != nil)
        #expect(spec.password == cluster.password && spec.viewOnlyPassword == cluster.viewOnlyPassword && cluster.password != cluster.viewOnlyPassword)
        #expect(spec.report == "127.0.0.1:7010" && spec.xvnc == FakeHost.xvnc && spec.warnSeconds == 120)
        #expect(spec.desktop == "xterm" && spec.geometry == session.geometry.description && spec.depth == session.depth)
        #expect(spec.xstartup.contains("xterm"))
        // The key is in the script (Slurm keeps it for the job's owner and root), never where `ps` shows it.
        #expect(!submitted.arguments.contains { $0.contains(cluster.key) })
        #expect(!submitted.arguments.contains { $0.contains(cluster.password) })

        // The reply is the only place the password is handed out; the record keeps the job.
        #expect(session.password == cluster.password)
        #expect(session.slurm == SlurmJob(jobId: "4242", partition: "batch", state: "PENDING", timeLimit: "4:00:00"))
        #expect(record.session.slurm == session.slurm && record.session.password == nil)
        #expect(record.session.pid == 0 && record.cgroup == nil && record.helper == nil)
        #expect(!desk.service.environment.cluster.hub.isEmpty)
        // Nothing of it runs on this host.
        #expect(desk.host.events.isEmpty, "a cluster start touched the host: \(desk.host.events)")
    }

    @Test func anAdminsStartRunsAsTheUserWithTheSitesDefaultsUnderWhatTheRequestNames() async throws {
        let desk = try Desk { $0.slurm.account = "lab"; $0.slurm.gres = "gpu:1"; $0.slurm.time = "2:00:00" }
        defer { desk.remove() }
        let session = try await desk.start(Self.root, for: "bob", SlurmOptions(partition: "gpu", time: "30"))
        let submitted = try #require(desk.scheduler.submissions.first)
        #expect(submitted.user == "bob" && session.user == "bob" && session.uid == 1002)
        #expect(Array(submitted.arguments.suffix(5)) == ["--error=/dev/null", "--partition=gpu", "--time=30", "--account=lab", "--gres=gpu:1"])
        #expect(submitted.arguments.contains("--chdir=/home/bob"))
        #expect(session.slurm?.partition == "gpu" && session.slurm?.timeLimit == "30")

        // Named in the request, each wins over the site's.
        _ = try await desk.start(Self.alice, SlurmOptions(partition: "short", time: "1:00:00", gres: "gpu:a100:2", account: "proj"))
        #expect(Array(desk.scheduler.submissions[1].arguments.suffix(4)) == ["--partition=short", "--time=1:00:00", "--account=proj", "--gres=gpu:a100:2"])
    }

    @Test func aRefusalFromSbatchIsTheStartsAnswerAndLeavesNothing() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let words = "Slurm did not take the desktop's job: sbatch: error: invalid partition specified: nope; check the partition, time, account and gres you asked for (sinfo, sacctmgr show assoc user=alice)."
        desk.scheduler.refuse(with: DeskError(.slurmRefused, words, cause: .other("sbatch: error: invalid partition specified: nope")))
        await #expect { try await desk.start(Self.alice, SlurmOptions(partition: "nope")) } throws: { error in
            (error as? DeskError)?.code == .slurmRefused && (error as? DeskError)?.message == words
        }
        #expect(desk.scheduler.submissions.map(\.user) == ["alice"])
        #expect(await desk.service.registry.isEmpty)
        #expect(desk.recordFiles.isEmpty)
        #expect(desk.service.environment.cluster.hub.isEmpty, "a refused job's key is still accepted")
        #expect(desk.scheduler.cancels.isEmpty)

        let reply = try await desk.send(Request(command: .start, slurm: SlurmOptions()), as: Self.alice)
        #expect(reply.error?.code == .slurmRefused && reply.error?.message == words)
        #expect(reply.sessions == nil)
        // Audited as a refused start; no session began, so none ended.
        #expect(try desk.auditTrail.map(\.command) == [.start])
        #expect(try desk.auditTrail.last?.outcome == "slurm-refused")

        // Its display was let go: the next start that Slurm takes has it.
        desk.scheduler.refuse(with: nil)
        #expect(try await desk.start(Self.alice).display == Display(1))
    }

    // MARK: Following the job

    @Test func aStartWhoseJobNeverReportsAnswersQueuedAfterTheWait() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let began = ContinuousClock.now
        let session = try await desk.start(Self.alice)
        #expect(ContinuousClock.now - began >= .milliseconds(200))
        #expect(session.state == .queued && session.slurm?.jobId == "4242" && session.rfbSocket == nil)
        #expect(session.password?.count == 8)
        let listed = await desk.service.list(all: false, caller: Self.alice)
        #expect(listed.map(\.state) == [.queued] && listed.first?.password == nil)
    }

    @Test func squeueAndTheJobsReportsMoveTheSessionFromQueuedToReady() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        let managed = try await desk.managed(session.id)

        desk.scheduler.answer([SqueueRow(jobId: "4242", state: "PENDING", reason: "Resources", partition: "batch", timeLimit: "4:00:00")])
        await desk.service.followClusterJobs()
        var shown = try await desk.shown(session.id)
        #expect(shown.state == .queued && shown.slurm?.reason == "Resources" && shown.slurm?.node == nil)
        #expect(try desk.record(of: session.id)?.session.slurm?.reason == "Resources", "the reason is not on record")
        #expect(await managed.clusterDesktopLogin(viewOnly: false) == nil)

        // Slurm runs it; the job has not reported yet: starting, on its node, with its end in sight.
        let now = Date()
        desk.scheduler.answer([SqueueRow(jobId: "4242", state: "RUNNING", node: "node1", partition: "batch", timeLimit: "4:00:00", secondsLeft: 14_390)])
        await desk.service.followClusterJobs(now: now)
        shown = try await desk.shown(session.id)
        #expect(shown.state == .starting)
        #expect(shown.slurm == SlurmJob(jobId: "4242", node: "node1", partition: "batch", state: "RUNNING", reason: nil, timeLimit: "4:00:00",
                                        endsAt: now.addingTimeInterval(14_390)))

        await managed.jobReported(Self.ready)
        shown = try await desk.shown(session.id)
        #expect(shown.state == .ready && shown.rfbSocket == "/tmp/.X11-unix/X5" && shown.slurm?.node == "node1")
        let record = try #require(try desk.record(of: session.id))
        let cluster = try #require(record.cluster)
        #expect(cluster.address == "10.77.0.11" && cluster.port == 41234 && record.session.rfbSocket == "/tmp/.X11-unix/X5")
        let login = try #require(await managed.clusterDesktopLogin(viewOnly: false))
        #expect(login.address == "10.77.0.11" && login.endpoint == .tcp(port: 41234) && login.password == cluster.password)
        #expect(login.hop?.session == session.id && login.hop?.key == cluster.keyBytes && login.hop?.key != nil)
        #expect(await managed.clusterDesktopLogin(viewOnly: true)?.password == cluster.viewOnlyPassword)

        // Viewers, as the job counts them.
        await managed.jobReported(JobReport(event: .viewers, viewers: 2))
        shown = try await desk.shown(session.id)
        #expect(shown.clients == 2 && shown.idleSeconds == 0 && shown.lastClientAt == nil)
        await managed.jobReported(JobReport(event: .viewers, viewers: 0))
        shown = try await desk.shown(session.id)
        let left = try #require(shown.lastClientAt)
        #expect(shown.clients == 0 && shown.idleSeconds == 0 && abs(left.timeIntervalSinceNow) < 5)
        // Between reports the idle time grows.
        await desk.service.refresh(now: left.addingTimeInterval(600.5))
        #expect(try await desk.shown(session.id).idleSeconds == 600)

        // A later look at squeue: the time left moves the end.
        let later = now.addingTimeInterval(60)
        desk.scheduler.answer([SqueueRow(jobId: "4242", state: "RUNNING", node: "node1", partition: "batch", timeLimit: "4:00:00", secondsLeft: 14_330)])
        await desk.service.followClusterJobs(now: later)
        shown = try await desk.shown(session.id)
        #expect(shown.state == .ready && shown.slurm?.endsAt == later.addingTimeInterval(14_330))
    }

    @Test func aReadyReportEndsTheStartsWaitAtOnce() async throws {
        let desk = try Desk { $0.slurm.startWait = .seconds(120) }
        defer { desk.remove() }
        let began = ContinuousClock.now
        let start = Task { try await desk.start(Self.alice) }
        #expect(await Self.eventually { await desk.service.registry.session(on: Display(1))?.record.session.slurm != nil })
        let managed = try #require(await desk.service.registry.session(on: Display(1)))
        try await Task.sleep(for: .milliseconds(50))   // the start is waiting by now
        await managed.jobReported(Self.ready)
        let session = try await start.value
        // Well before the start's own wait ran out: the report, or the kill, ended it.
        #expect(ContinuousClock.now - began < .seconds(60))
        #expect(session.state == .ready && session.rfbSocket == "/tmp/.X11-unix/X5" && session.password != nil)
    }

    @Test func theIdleTimeOfADesktopThatWaitedInTheQueueCountsFromWhenItWasReady() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        // Submitted three hours ago by an earlier deskd; Slurm kept it queued all that time.
        let id = String(repeating: "c3", count: 16)
        var session = Session(id: id, user: "alice", uid: 1001, gid: 1001, display: Display(4), endpoint: .unixSocket(path: ""), pid: 0,
                              pidStartTicks: 0, executable: FakeHost.xvnc, state: .queued, startedAt: Date().addingTimeInterval(-3 * 3600),
                              desktop: "xterm", geometry: .default, depth: 24)
        session.rfbSocket = nil
        session.slurm = SlurmJob(jobId: "777", partition: "batch", state: "PENDING", timeLimit: "4:00:00")
        var record = SessionRecord(session: session)
        record.cluster = ClusterRecord(key: String(repeating: "ab", count: 32), password: "abcdefgh", viewOnlyPassword: "hgfedcba")
        try desk.service.environment.store.save(record)
        await desk.service.adoptRunningSessions()
        #expect(try await desk.shown(id).state == .queued)

        await desk.service.registry.session(id: id)?.jobReported(Self.ready)
        let soon = try await desk.service.reap(ReapRequest(idleSeconds: 3600, dryRun: true), caller: Self.root, now: Date().addingTimeInterval(60))
        #expect(soon.isEmpty, "a desktop ready a minute ago is reaped for the hours it waited in Slurm's queue")
        let later = try await desk.service.reap(ReapRequest(idleSeconds: 3600, dryRun: true), caller: Self.root, now: Date().addingTimeInterval(3700))
        #expect(later.map(\.id) == [id])
    }

    // MARK: Ends

    @Test func aJobSlurmEndedEndsItsSessionWithSlurmsStateAndIsNotCancelled() async throws {
        let desk = try Desk { $0.slurm.maxPerUser = 5 }
        defer { desk.remove() }
        var sessions: [Session] = []
        for _ in 0..<5 { sessions.append(try await desk.start(Self.alice)) }
        #expect(sessions.compactMap(\.slurm?.jobId) == ["4242", "4243", "4244", "4245", "4246"])
        // The desktop of the last logged out: its job said why before it ended.
        await desk.service.registry.session(id: sessions[4].id)?.jobReported(Self.ready)
        await desk.service.registry.session(id: sessions[4].id)?.jobReported(JobReport(event: .ending, message: "the desktop logged out"))
        #expect(try await desk.shown(sessions[4].id).state == .ready, "the job's word alone ended its session")

        desk.scheduler.answer([
            SqueueRow(jobId: "4242", state: "TIMEOUT", node: "node1", partition: "batch", timeLimit: "4:00:00"),
            SqueueRow(jobId: "4243", state: "CANCELLED", node: "node1", partition: "batch", timeLimit: "4:00:00"),
            SqueueRow(jobId: "4244", state: "NODE_FAIL", node: "node2", partition: "batch", timeLimit: "4:00:00"),
            SqueueRow(jobId: "4245", state: "PENDING", reason: "Priority", partition: "batch", timeLimit: "4:00:00"),
            SqueueRow(jobId: "4246", state: "COMPLETED", node: "node1", partition: "batch", timeLimit: "4:00:00"),
        ])
        await desk.service.followClusterJobs()
        for index in [0, 1, 2, 4] { #expect(await desk.ended(sessions[index].id)) }
        #expect(try desk.endReason(of: sessions[0].id) == "Slurm job TIMEOUT")
        #expect(try desk.endReason(of: sessions[1].id) == "Slurm job CANCELLED")
        #expect(try desk.endReason(of: sessions[2].id) == "Slurm job NODE_FAIL")
        #expect(try desk.endReason(of: sessions[4].id) == "Slurm job COMPLETED: the desktop logged out")
        #expect(try desk.endReason(of: sessions[3].id) == nil)
        #expect(await desk.service.list(all: true, caller: Self.root).map(\.id) == [sessions[3].id])
        #expect(desk.recordFiles == ["\(sessions[3].id).json"])
        // Slurm ended them: nothing to cancel.
        #expect(desk.scheduler.cancels.isEmpty)
        #expect(try desk.auditTrail.filter { $0.command == .ended }.allSatisfy { $0.user == "alice" && $0.peerUser == "deskd" })
    }

    @Test func aFailedReportEndsTheSessionWithTheJobsWords() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        await desk.service.registry.session(id: session.id)?.jobReported(JobReport(event: .failed, message: "Xtigervnc is not installed on node1"))
        #expect(await desk.ended(session.id))
        #expect(try desk.endReason(of: session.id) == "Slurm job FAILED: Xtigervnc is not installed on node1")
        // Slurm has not said the job ended: deskd cancels it, once.
        #expect(desk.scheduler.cancels == [.init(jobID: "4242", user: "alice")])
        #expect(desk.recordFiles.isEmpty && desk.service.environment.cluster.hub.isEmpty)
    }

    @Test func aJobSqueueNoLongerKnowsEndsItsSessionAndSqueuesSilenceEndsNothing() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        // No cluster desktop: squeue is not asked.
        await desk.service.followClusterJobs()
        #expect(desk.scheduler.squeueCalls == 0)

        let session = try await desk.start(Self.alice)
        desk.scheduler.answer(nil)
        for _ in 0..<3 { await desk.service.followClusterJobs() }
        #expect(desk.scheduler.squeueCalls == 3)
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await desk.shown(session.id).state == .queued)
        #expect(try await desk.shown(session.id).slurm?.state == "PENDING")
        #expect(try desk.endReason(of: session.id) == nil)

        // squeue answers, without the job: Slurm forgot it (it ended long enough ago).
        desk.scheduler.answer([SqueueRow(jobId: "9999", state: "RUNNING", node: "node2")])
        await desk.service.followClusterJobs()
        #expect(await desk.ended(session.id))
        #expect(try desk.endReason(of: session.id) == "Slurm job ENDED: Slurm no longer knows the job")
        #expect(desk.recordFiles.isEmpty)
    }

    @Test func extendRaisesTheJobsLimitWithinTheSitesAndGivesBackWhatSlurmRefused() async throws {
        let desk = try Desk { $0.slurm.extendMaxSeconds = 3600 }
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        let now = Date()
        desk.scheduler.answer([SqueueRow(jobId: "4242", state: "RUNNING", node: "node1", partition: "batch", timeLimit: "4:00:00", secondsLeft: 600)])
        await desk.service.followClusterJobs(now: now)
        func extend(_ seconds: Int, as caller: Caller = Self.alice) async throws -> Response {
            try await desk.send(ExtendRequest(display: session.display, seconds: seconds).wire, as: caller)
        }
        // Another user may not; the owner may, and the end moves at once.
        #expect(try await extend(1800, as: Self.bob).error?.code == .permissionDenied)
        let extended = try await extend(1800)
        #expect(extended.ok && extended.sessions?.first?.slurm?.extendedSeconds == 1800, "\(extended)")
        #expect(extended.sessions?.first?.slurm?.endsAt == now.addingTimeInterval(600 + 1800))
        #expect(desk.scheduler.extensions.map(\.seconds) == [1800] && desk.scheduler.extensions.first?.jobID == "4242")
        // Past the site's hour in all: refused with what is left, and Slurm is not asked.
        let over = try await extend(2400)
        #expect(over.error?.code == .limitReached && over.error?.message.contains("0:30:00 longer at most") == true, "\(over)")
        #expect(desk.scheduler.extensions.count == 1)
        // Slurm refusing gives the time back.
        desk.scheduler.refuse(with: DeskError(.slurmRefused, "Slurm did not make job 4242 longer: Access/permission denied."))
        #expect(try await extend(1800).error?.code == .slurmRefused)
        #expect(try await desk.shown(session.id).slurm?.extendedSeconds == 1800)
        desk.scheduler.refuse(with: nil)
        #expect(try await extend(1800).ok)
        #expect(try await extend(60).error?.message.contains("as much longer as this site allows") == true)
        #expect(try desk.record(of: session.id)?.session.slurm?.extendedSeconds == 3600, "the extension is not on record")
        #expect(try desk.auditTrail.contains { $0.command == .extend && $0.ok && $0.outcome == "extended by 0:30:00" })
    }

    @Test func extendIsRefusedWhereTheSiteAllowsNoneAndForADesktopOnThisHost() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        let refused = try await desk.send(ExtendRequest(display: session.display, seconds: 600).wire, as: Self.alice)
        #expect(refused.error?.code == .permissionDenied && refused.error?.message.contains("extend_max is 0s") == true)
        #expect(desk.scheduler.extensions.isEmpty)
    }

    @Test func aStartOverAPartitionsLimitIsRefusedBeforeSbatch() async throws {
        let desk = try Desk {
            $0.slurm.maxTimeSeconds = 7200
            $0.slurm.time = "20"
        }
        defer { desk.remove() }
        desk.scheduler.state.withLock { $0.partitions = [SlurmPartition(name: "batch", isDefault: true, maxTimeSeconds: 1800, cores: 4, gpus: 0)] }
        await #expect { try await desk.start(Self.alice, SlurmOptions(time: "1:00:00")) } throws: {
            ($0 as? DeskError)?.message.contains("partition batch lets a job run 0:30:00 at most") == true
        }
        await #expect { try await desk.start(Self.alice, SlurmOptions(cores: 8)) } throws: { ($0 as? DeskError)?.message.contains("have 4 cores") == true }
        #expect(desk.scheduler.submissions.isEmpty)
        _ = try await desk.start(Self.alice, SlurmOptions(time: "20", cores: 2))
        #expect(desk.scheduler.submissions.first?.arguments.contains("--cpus-per-task=2") == true)
        let choices = try await desk.send(Request(command: .desktops), as: Self.alice).cluster
        #expect(choices?.partitions.map(\.name) == ["batch"] && choices?.maxTimeSeconds == 7200 && choices?.defaults.partition == "batch")
    }

    @Test func aKillCancelsTheJobOnceAsItsOwnerAndAnotherUsersKillIsRefused() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        await #expect { try await desk.service.kill(.display(session.display), caller: Self.bob) } throws: {
            ($0 as? DeskError)?.code == .permissionDenied
        }
        #expect(desk.scheduler.cancels.isEmpty)
        #expect(try await desk.shown(session.id).state == .queued)

        let killed = try await desk.service.kill(.display(session.display), caller: Self.root)
        #expect(killed.map(\.id) == [session.id] && killed.map(\.state) == [.exited])
        #expect(desk.scheduler.cancels == [.init(jobID: "4242", user: "alice")])
        #expect(try desk.endReason(of: session.id) == "killed by root")
        #expect(await desk.service.registry.isEmpty && desk.recordFiles.isEmpty && desk.service.environment.cluster.hub.isEmpty)

        // Slurm then shows the job cancelled: there is no session left to end, nothing more to cancel.
        desk.scheduler.answer([SqueueRow(jobId: "4242", state: "CANCELLED", node: "node1")])
        await desk.service.followClusterJobs()
        try await Task.sleep(for: .milliseconds(50))
        #expect(desk.scheduler.cancels.count == 1)
        #expect(try desk.auditTrail.filter { $0.command == .ended }.count == 1)

        // A ready one, killed by its owner.
        let ready = try await desk.start(Self.alice)
        await desk.service.registry.session(id: ready.id)?.jobReported(Self.ready)
        _ = try await desk.service.kill(.display(ready.display), caller: Self.alice)
        #expect(desk.scheduler.cancels == [.init(jobID: "4242", user: "alice"), .init(jobID: "4243", user: "alice")])
    }

    @Test func passwdIsRefusedForAClusterDesktop() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        await #expect { try await desk.service.rotatePassword(session.display, viewOnly: false, caller: Self.alice) } throws: {
            ($0 as? DeskError)?.code == .noSuchSession
        }
        await desk.service.registry.session(id: session.id)?.jobReported(Self.ready)
        for viewOnly in [false, true] {
            await #expect { try await desk.service.rotatePassword(session.display, viewOnly: viewOnly, caller: Self.alice) } throws: { error in
                (error as? DeskError)?.code == .badRequest && (error as? DeskError)?.message
                    == "deskctl passwd does not change a cluster desktop's password; deskctl url --revoke :1 takes its browser links back, and a new desktop (deskctl kill, then start --slurm) has new passwords."
            }
        }
        // The password is what it was: the gateway still logs in with it.
        let record = try #require(try desk.record(of: session.id))
        #expect(record.cluster?.password == session.password)
    }

    // MARK: Re-adoption

    @Test func aRestartedDeskdTakesBackClusterDesktopsAndFollowsThem() async throws {
        let desk = try Desk { $0.slurm.maxPerUser = 3 }
        defer { desk.remove() }
        let queued = try await desk.start(Self.alice)
        let ready = try await desk.start(Self.alice)
        await desk.service.registry.session(id: ready.id)?.jobReported(Self.ready)
        let keys = try [queued.id, ready.id].map { try #require(try desk.record(of: $0)?.cluster?.key) }

        let next = try desk.restarted()
        #expect(next.service.environment.cluster.hub.isEmpty)
        await next.service.adoptRunningSessions()
        let listed = await next.service.list(all: true, caller: Self.root)
        #expect(listed.map(\.id) == [queued.id, ready.id])
        #expect(listed.map(\.state) == [.queued, .ready])
        #expect(listed.map(\.slurm?.jobId) == ["4242", "4243"])
        // Taken back on its record alone: pid 0 is no process, and nothing was ended for it.
        #expect(try next.auditTrail.filter { $0.command == .ended }.isEmpty)
        #expect(!next.service.environment.cluster.hub.isEmpty)
        let adopted = try await next.managed(ready.id)
        let login = try #require(await adopted.clusterDesktopLogin(viewOnly: false))
        #expect(login.address == "10.77.0.11" && login.endpoint == .tcp(port: 41234) && login.hop?.key == HexBytes.decode(keys[1], count: 32))

        // The queued one's job reports in to the new deskd.
        await next.service.registry.session(id: queued.id)?.jobReported(Self.ready)
        #expect(try await next.shown(queued.id).state == .ready)

        // Both are still followed: Slurm ends one, a kill the other.
        next.scheduler.answer([SqueueRow(jobId: "4242", state: "RUNNING", node: "node1"), SqueueRow(jobId: "4243", state: "TIMEOUT", node: "node1")])
        await next.service.followClusterJobs()
        #expect(await next.ended(ready.id))
        #expect(try next.endReason(of: ready.id) == "Slurm job TIMEOUT")
        #expect(next.scheduler.cancels.isEmpty)
        _ = try await next.service.kill(.display(queued.display), caller: Self.alice)
        #expect(next.scheduler.cancels == [.init(jobID: "4242", user: "alice")])
        #expect(next.recordFiles.isEmpty && next.service.environment.cluster.hub.isEmpty)
    }

    // MARK: Reports for sessions that are gone

    @Test func aReportForASessionDeskdNoLongerHasDoesNothing() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        // As ClusterHub delivers it, for an id the registry does not know.
        await desk.service.registry.session(id: String(repeating: "f0", count: 16))?.jobReported(Self.ready)
        #expect(await desk.service.registry.isEmpty && desk.recordFiles.isEmpty)

        // A report that reaches an ended session (the hub handed it over as the kill ran).
        let session = try await desk.start(Self.alice)
        let managed = try await desk.managed(session.id)
        _ = try await desk.service.kill(.display(session.display), caller: Self.alice)
        await managed.jobReported(Self.ready)
        await managed.jobReported(JobReport(event: .viewers, viewers: 1))
        await managed.jobReported(JobReport(event: .failed, message: "late"))
        try await Task.sleep(for: .milliseconds(100))
        #expect(await managed.session.state == .exited)
        #expect(await managed.clusterDesktopLogin(viewOnly: false) == nil)
        #expect(desk.recordFiles.isEmpty, "a late report wrote an ended session's record back")
        #expect(desk.service.environment.cluster.hub.isEmpty)
        #expect(try desk.auditTrail.filter { $0.command == .ended }.map(\.outcome) == ["killed by alice"])
        #expect(desk.scheduler.cancels.count == 1)
        #expect(await desk.service.list(all: true, caller: Self.root).isEmpty)
    }

    // MARK: Races

    @Test func aKillDuringTheSubmissionWaitsForItThenCancelsWhatWasSubmitted() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        desk.scheduler.state.withLock { $0.holdSubmit = true }
        let start = Task { try await desk.start(Self.alice) }
        #expect(await Self.eventually { desk.scheduler.state.withLock { $0.submitsBegun } == 1 })
        #expect(await desk.service.list(all: true, caller: Self.root).map(\.state) == [.queued])

        let kill = Task { try await desk.service.kill(.display(Display(1)), caller: Self.root) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(desk.scheduler.cancels.isEmpty, "a cancel went out before sbatch named the job")
        desk.scheduler.state.withLock { $0.holdSubmit = false }
        #expect(try await kill.value.map(\.display) == [Display(1)])
        await #expect { try await start.value } throws: { error in
            (error as? DeskError)?.code == .noSuchSession
                && (error as? DeskError)?.message == "the desktop on :1 was killed while it started; start another if you still need one."
        }
        #expect(desk.scheduler.cancels == [.init(jobID: "4242", user: "alice")])
        #expect(await desk.service.registry.isEmpty && desk.recordFiles.isEmpty && desk.service.environment.cluster.hub.isEmpty)
        #expect(try desk.auditTrail.filter { $0.command == .ended }.map(\.outcome) == ["killed by root"])
    }

    @Test func aKillWhileTheStartWaitsForTheJobAnswersTheStartAsKilled() async throws {
        let desk = try Desk { $0.slurm.startWait = .seconds(120) }
        defer { desk.remove() }
        let began = ContinuousClock.now
        let start = Task { try await desk.start(Self.alice) }
        #expect(await Self.eventually { await desk.service.registry.session(on: Display(1))?.record.session.slurm != nil })
        try await Task.sleep(for: .milliseconds(50))
        _ = try await desk.service.kill(.display(Display(1)), caller: Self.alice)
        await #expect { try await start.value } throws: { error in
            (error as? DeskError)?.code == .noSuchSession
                && (error as? DeskError)?.message == "the desktop on :1 was killed while it started; start another if you still need one."
        }
        // Well before the start's own wait ran out: the report, or the kill, ended it.
        #expect(ContinuousClock.now - began < .seconds(60))
        #expect(desk.scheduler.cancels == [.init(jobID: "4242", user: "alice")])
    }

    @Test func aJobThatFailsWhileTheStartWaitsGivesTheStartItsWords() async throws {
        let desk = try Desk { $0.slurm.startWait = .seconds(120) }
        defer { desk.remove() }
        let start = Task { try await desk.start(Self.alice) }
        #expect(await Self.eventually { await desk.service.registry.session(on: Display(1))?.record.session.slurm != nil })
        try await Task.sleep(for: .milliseconds(50))
        await desk.service.registry.session(on: Display(1))?.jobReported(JobReport(event: .failed, message: "Xtigervnc is not installed on node1"))
        await #expect { try await start.value } throws: { error in
            (error as? DeskError)?.code == .desktopExited
                && (error as? DeskError)?.message == "the desktop's Slurm job 4242 ended before its desktop was ready: Slurm job FAILED: Xtigervnc is not installed on node1; see deskctl history."
        }
        // The start answers once the teardown has begun; it goes on to its end.
        #expect(await Self.eventually { await desk.service.registry.isEmpty })
        #expect(desk.recordFiles.isEmpty && desk.scheduler.cancels == [.init(jobID: "4242", user: "alice")])
    }

    @Test func aJobSubmittedWhileSqueueRunsIsNotTakenForOneSlurmForgot() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        // Another cluster desktop, so squeue is asked.
        let other = try await desk.start(Self.bob)
        desk.scheduler.answer([SqueueRow(jobId: "4242", state: "PENDING", reason: "Priority")])

        desk.scheduler.state.withLock { $0.holdSubmit = true }
        let start = Task { try await desk.start(Self.alice) }
        #expect(await Self.eventually { desk.scheduler.state.withLock { $0.submitsBegun } == 2 })
        // squeue answers from before the new job existed; its answer reaches deskd after sbatch's.
        desk.scheduler.state.withLock { $0.holdSqueue = true }
        let follow = Task { await desk.service.followClusterJobs() }
        #expect(await Self.eventually { desk.scheduler.squeueCalls == 1 })
        desk.scheduler.state.withLock { $0.holdSubmit = false }
        #expect(await Self.eventually { await desk.service.registry.session(on: Display(2))?.record.session.slurm?.jobId == "4243" })
        desk.scheduler.state.withLock { $0.holdSqueue = false }
        await follow.value

        let session = try await start.value
        try await Task.sleep(for: .milliseconds(100))
        let reason = try desk.endReason(of: session.id)
        #expect(reason == nil, "a job submitted while squeue ran was taken for one Slurm forgot: \(reason ?? "")")
        #expect(await desk.service.list(all: true, caller: Self.root).map(\.id) == [other.id, session.id])
        #expect(desk.scheduler.cancels.isEmpty)
        // The next look judges it.
        desk.scheduler.answer([SqueueRow(jobId: "4242", state: "PENDING"), SqueueRow(jobId: "4243", state: "PENDING", reason: "Resources")])
        await desk.service.followClusterJobs()
        #expect(try await desk.shown(session.id).slurm?.reason == "Resources")
    }

    @Test func aReportDuringTheTeardownIsIgnored() async throws {
        let desk = try Desk()
        defer { desk.remove() }
        let session = try await desk.start(Self.alice)
        let managed = try await desk.managed(session.id)
        desk.scheduler.state.withLock { $0.holdCancel = true }
        let kill = Task { try await desk.service.kill(.display(session.display), caller: Self.alice) }
        #expect(await Self.eventually { desk.scheduler.state.withLock { $0.cancelsBegun } == 1 })
        // scancel runs; the job, told to end, says it is ready (it was bringing the desktop up).
        await managed.jobReported(Self.ready)
        #expect(await managed.session.state == .stopping)
        #expect(await managed.record.cluster?.address == nil, "a report during the teardown changed the session")
        #expect(await managed.clusterDesktopLogin(viewOnly: false) == nil)
        desk.scheduler.state.withLock { $0.holdCancel = false }
        _ = try await kill.value
        #expect(await managed.session.state == .exited)
        #expect(desk.recordFiles.isEmpty && desk.service.environment.cluster.hub.isEmpty)
        #expect(desk.scheduler.cancels.count == 1)
    }
}
