@testable import DeskDaemon
import DeskCore
import DeskLinux
import Foundation
import Logging
import Testing

/// The daemon's decisions, under a fake host: allocation, limits, re-adoption, teardown order
/// and what the audit trail says. No root, no Xvnc; the end-to-end tests do the real thing.
@Suite struct SessionServiceTests {
    /// A service on a fake host, with its records, logs and audit trail in a temporary directory.
    struct Daemon {
        let host: FakeHost
        let service: SessionService
        let harness: ControlHarness
        let configuration: DaemonConfiguration
        /// What deskd's service group does: runs the work sessions start on their own (exits).
        let tasks: Task<Void, Never>

        static let templates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Templates").path
        static let logger = Logger(label: "deskd-test") { _ in SwiftLogNoOpLogHandler() }

        init(host: FakeHost = FakeHost(), root: String? = nil, configure: (inout DaemonConfiguration) -> Void = { _ in }) throws {
            let root = root ?? FileManager.default.temporaryDirectory.appendingPathComponent("deskd-service-\(UUID())").path
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            var configuration = DaemonConfiguration()
            configuration.runtimeDirectory = root + "/run"
            configuration.stateDirectory = root + "/state"
            configuration.templateDirectories = [Self.templates]
            configuration.xvncPath = FakeHost.xvnc
            configuration.killGrace = .milliseconds(50)
            configuration.startsPerMinute = nil
            configure(&configuration)
            self.host = host
            self.configuration = configuration
            self.service = try SessionService(configuration: configuration, host: host, logger: Self.logger)
            self.harness = ControlHarness(service: service, logger: Self.logger)
            self.tasks = Task { [service] in try? await service.tasks.run() }
        }

        /// Another deskd on the same host and state, as after a restart.
        func restarted() throws -> Daemon {
            try Daemon(host: host, root: URL(fileURLWithPath: configuration.stateDirectory).deletingLastPathComponent().path) {
                $0 = configuration
            }
        }

        /// A request through the harness, as the control socket would hand it over.
        func send(_ request: Request, as caller: Caller) async throws -> Response {
            let bytes = Array(try JSONEncoder.desk.encode(request))
            return await harness.handle(bytes, from: PeerCredentials(pid: caller.pid, uid: caller.uid, gid: caller.gid))
        }

        var auditTrail: [AuditEntry] {
            get throws {
                let text = (try? String(contentsOfFile: configuration.auditLogPath, encoding: .utf8)) ?? ""
                return try text.split(separator: "\n").map { try JSONDecoder.desk.decode(AuditEntry.self, from: Data($0.utf8)) }
            }
        }

        func remove() {
            tasks.cancel()
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: configuration.stateDirectory).deletingLastPathComponent().path)
        }
    }

    static let root = Caller(uid: 0, gid: 0, pid: 10, userName: "root", isAdmin: true)
    static let alice = Caller(uid: 1001, gid: 1001, pid: 11, userName: "alice", isAdmin: false)
    static let bob = Caller(uid: 1002, gid: 1002, pid: 12, userName: "bob", isAdmin: false)

    // MARK: Allocation

    @Test func startsTakeTheLowestFreeDisplayAndStepAroundForeignOnes() async throws {
        let host = FakeHost()
        host.state.withLock { $0.occupied[1] = .liveLock(pid: 4242) }
        let daemon = try Daemon(host: host)
        defer { daemon.remove() }

        let first = try await daemon.service.start(StartRequest(), caller: Self.alice)
        let second = try await daemon.service.start(StartRequest(user: "bob"), caller: Self.root)
        #expect(first.display == Display(2) && second.display == Display(3))
        #expect(first.password?.count == 8 && first.state == .ready)
        let listed = await daemon.service.list(all: true, caller: Self.root)
        #expect(listed.map(\.display) == [Display(2), Display(3)])
        #expect(listed.allSatisfy { $0.password == nil })
        #expect(await daemon.service.foreignDisplays(caller: Self.root).map(\.display) == [Display(1)])
        #expect(await daemon.service.list(all: true, caller: Self.alice).map(\.user) == ["alice"])

        await #expect(throws: DeskError.self) { try await daemon.service.start(StartRequest(user: "alice", display: Display(3)), caller: Self.root) }
    }

    @Test func concurrentStartsLandOnDistinctDisplays() async throws {
        let daemon = try Daemon { $0.limits.maxSessionsPerUser = nil }
        defer { daemon.remove() }
        let displays = try await withThrowingTaskGroup(of: Display.self) { group in
            for index in 0..<12 {
                group.addTask { try await daemon.service.start(StartRequest(user: index % 2 == 0 ? "alice" : "bob"), caller: Self.root).display }
            }
            return try await group.reduce(into: [Display]()) { $0.append($1) }
        }
        #expect(Set(displays) == Set((1...12).map(Display.init)))
    }

    @Test func aDisplayTakenDuringTheStartSendsItToTheNext() async throws {
        let host = FakeHost()
        host.state.withLock {
            $0.readiness = [.exited]
            $0.xvncLog = ["Fatal server error:", "Server is already active for display 1"]
        }
        let daemon = try Daemon(host: host)
        defer { daemon.remove() }
        let session = try await daemon.service.start(StartRequest(), caller: Self.alice)
        #expect(session.display == Display(2))
        #expect(await daemon.service.list(all: true, caller: Self.root).count == 1)
    }

    // MARK: Limits and refusals

    @Test func limitsAreCheckedWhenTheDisplayIsClaimed() async throws {
        let daemon = try Daemon { $0.limits.maxSessionsPerUser = 1; $0.limits.maxSessions = 2 }
        defer { daemon.remove() }
        _ = try await daemon.service.start(StartRequest(), caller: Self.alice)
        await #expect { try await daemon.service.start(StartRequest(), caller: Self.alice) } throws: { ($0 as? DeskError)?.code == .limitReached }
        _ = try await daemon.service.start(StartRequest(), caller: Self.bob)
        await #expect { try await daemon.service.start(StartRequest(user: "carol"), caller: Self.root) } throws: { ($0 as? DeskError)?.code == .unknownUser }
        await #expect { try await daemon.service.start(StartRequest(), caller: Self.root) } throws: { ($0 as? DeskError)?.code == .userNotAllowed }
        await #expect { try await daemon.service.start(StartRequest(user: "bob"), caller: Self.alice) } throws: { ($0 as? DeskError)?.code == .permissionDenied }
        #expect(await daemon.service.list(all: true, caller: Self.root).count == 2)
    }

    @Test func aRefusedLoginEndsTheSessionAndHandsOutNoPassword() async throws {
        let host = FakeHost()
        host.state.withLock { $0.refusedLogins["alice"] = "Your account has expired" }
        let daemon = try Daemon(host: host)
        defer { daemon.remove() }
        let reply = try await daemon.send(Request(command: .start), as: Self.alice)
        #expect(reply.error?.code == .loginRefused)
        #expect(reply.error?.message.contains("Your account has expired") == true)
        // PAM's status is the refusal's cause, for a script or a log reader.
        #expect(reply.error?.cause == .pam(code: 13, text: "PAM_ACCT_EXPIRED"))
        #expect(reply.sessions == nil)
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        #expect(host.events.contains("remove directory") && host.events.contains("remove cgroup"))
        let trail = try daemon.auditTrail
        #expect(trail.map(\.command) == [.ended, .start])
        #expect(trail.first?.outcome.contains("login refused") == true)
        #expect(trail.last?.outcome == "login-refused")
    }

    // MARK: Teardown

    @Test func teardownStopsEveryProcessBeforeItRemovesTheirTraces() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let session = try await daemon.service.start(StartRequest(), caller: Self.alice)
        let record = daemon.configuration.sessionRecordsDirectory + "/\(session.id).json"
        #expect(FileManager.default.fileExists(atPath: record))
        let before = daemon.host.events.count

        _ = try await daemon.service.kill(.display(session.display), caller: Self.alice)
        let events = Array(daemon.host.events.dropFirst(before))
        let order = ["signal TERM", "remove cgroup", "unpublish :1", "release lock :1", "remove directory"].map { events.firstIndex(of: $0) }
        #expect(order.allSatisfy { $0 != nil }, "teardown did: \(events)")
        #expect(order.compactMap { $0 } == order.compactMap { $0 }.sorted(), "teardown did: \(events)")
        #expect(daemon.host.pids(of: session.id).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: record))
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
    }

    @Test func aKillDuringTheStartEndsTheSessionInsteadOfHandingItOut() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        daemon.host.state.withLock { $0.holdGreeting = true }
        let start = Task { try await daemon.service.start(StartRequest(), caller: Self.alice) }
        for _ in 0..<400 where await daemon.service.list(all: true, caller: Self.root).isEmpty {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await daemon.service.list(all: true, caller: Self.root).map(\.state) == [.starting])

        let kill = Task { try await daemon.service.kill(.display(Display(1)), caller: Self.root) }
        try await Task.sleep(for: .milliseconds(50))
        daemon.host.state.withLock { $0.holdGreeting = false }
        #expect(try await kill.value.map(\.display) == [Display(1)])
        await #expect { try await start.value } throws: { ($0 as? DeskError)?.code == .noSuchSession }
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        #expect(try daemon.auditTrail.last?.outcome.contains("killed by root") == true)
    }

    @Test func aKillBetweenTheClaimAndTheLaunchStillEndsTheStart() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let environment = daemon.service.environment
        let id = String(repeating: "ab", count: 16)
        let session = ManagedSession(record: SessionRecord(
            session: Session(id: id, user: "alice", uid: 1001, gid: 1001, display: Display(1), endpoint: .unixSocket(path: "/run/x"),
                             pid: 0, pidStartTicks: 0, executable: FakeHost.xvnc, state: .starting, startedAt: Date(),
                             desktop: "xterm", geometry: .default, depth: 24)
        ), lifecycle: .starting, environment: environment)
        #expect(try await environment.registry.claim(Display(1), for: session, limits: SessionLimits()))
        let kill = Task { await session.end(.killed(by: "root")) }
        try await Task.sleep(for: .milliseconds(20))

        let plan = LaunchPlan(
            account: try #require(daemon.host.account(named: "alice")),
            template: try TemplateLibrary(directories: [Daemon.templates]).template(named: "xterm"),
            geometry: .default, depth: 24, display: nil, userXstartup: false, configuration: daemon.configuration)
        await #expect {
            try await session.launch(SessionBringUp(plan: plan, environment: environment), timings: StartTimings())
        } throws: { error in
            guard case .failed(let failure, _) = error as? SessionBringUp.Failure else { return false }
            return failure.code == .noSuchSession
        }
        await kill.value
        #expect(daemon.host.pids(of: id).isEmpty)
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        #expect(try daemon.auditTrail.last?.outcome.contains("killed by root") == true)
    }

    @Test func aKillStandsEvenWhenTheDisplayTurnsOutTaken() async throws {
        let host = FakeHost()
        host.state.withLock {
            $0.holdGreeting = true
            $0.readiness = [.exited]
            $0.xvncLog = ["Server is already active for display 1"]
        }
        let daemon = try Daemon(host: host)
        defer { daemon.remove() }
        let start = Task { try await daemon.service.start(StartRequest(), caller: Self.alice) }
        for _ in 0..<400 where await daemon.service.list(all: true, caller: Self.root).isEmpty {
            try await Task.sleep(for: .milliseconds(5))
        }
        let kill = Task { try await daemon.service.kill(.all, caller: Self.alice) }
        try await Task.sleep(for: .milliseconds(50))
        host.state.withLock { $0.holdGreeting = false }
        _ = try await kill.value
        await #expect { try await start.value } throws: { ($0 as? DeskError)?.code == .noSuchSession }
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        #expect(!host.events.contains("publish :2"))
    }

    @Test func aStartThatFailsEarlyLetsGoOfItsDisplay() async throws {
        let host = FakeHost()
        host.state.withLock { $0.failDirectory = true }
        let daemon = try Daemon(host: host) { $0.limits.maxSessionsPerUser = 1 }
        defer { daemon.remove() }
        for _ in 0..<3 {
            await #expect { try await daemon.service.start(StartRequest(), caller: Self.alice) } throws: { ($0 as? DeskError)?.code == .internalError }
        }
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        // The OS's error travels as the refusal's cause, beside the sentence, to the client too.
        let reply = try await daemon.send(Request(command: .start), as: Self.alice)
        guard case .system(let operation, let path, let errno, let name, _) = reply.deskError?.cause else {
            Issue.record("no system cause in \(reply)")
            return
        }
        #expect(operation == "mkdir" && path?.hasSuffix("/by-id/" + (path?.split(separator: "/").last.map(String.init) ?? "")) == true)
        #expect(errno == ENOSPC && name == "ENOSPC")
        host.state.withLock { $0.failDirectory = false }
        #expect(try await daemon.service.start(StartRequest(), caller: Self.alice).display == Display(1))

        let unreadable = try Daemon(host: FakeHost()) {
            $0.limits.maxSessionsPerUser = 1
            $0.vncExposure.tlsCertificate = "/nonexistent/cert.pem"
            $0.vncExposure.tlsKey = "/nonexistent/key.pem"
        }
        defer { unreadable.remove() }
        for _ in 0..<3 {
            await #expect { try await unreadable.service.start(StartRequest(), caller: Self.alice) } throws: {
                ($0 as? DeskError)?.message.contains("cannot read the TLS certificate") == true
            }
        }
        #expect(await unreadable.service.list(all: true, caller: Self.root).isEmpty)
        #expect(try unreadable.auditTrail.isEmpty)
    }

    @Test func aDesktopThatEndsAtOnceFailsTheStartWithItsLogAndLeavesNothing() async throws {
        let host = FakeHost()
        host.state.withLock {
            $0.desktopEndsAtOnce = .exited(status: 127)
            $0.xvncLog = ["/run/deskd/sessions/x/xstartup: 7: exec: nosuchdesktop: not found"]
        }
        let daemon = try Daemon(host: host)
        defer { daemon.remove() }
        await #expect { try await daemon.service.start(StartRequest(), caller: Self.alice) } throws: { error in
            let error = error as? DeskError
            return error?.code == .desktopExited && error?.message.contains("exited with status 127 before it opened its display on :1, so deskd ended the session") == true
                && error?.message.contains("its last log lines: /run/deskd/sessions/x/xstartup: 7: exec: nosuchdesktop: not found") == true
        }
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        #expect(host.state.withLock { $0.processes.isEmpty }, "a process of the failed session was left")
        // What the start made is unwound, and only that: the display was never linked.
        #expect(host.events.contains("remove cgroup") && !host.events.contains("unpublish :1"))
        // The display is free again, and a desktop that works starts on it.
        let next = try await daemon.service.start(StartRequest(), caller: Self.alice)
        #expect(next.display == Display(1) && next.desktopPid != nil)

        // Where a desktop's exit does not end its session, it cannot fail the start either.
        let lenient = try Daemon(host: FakeHost()) { $0.desktopExitEndsSession = false }
        defer { lenient.remove() }
        lenient.host.state.withLock { $0.desktopEndsAtOnce = .exited(status: 1) }
        #expect(try await lenient.service.start(StartRequest(), caller: Self.alice).display == Display(1))
    }

    @Test func theDesktopsListSaysWhatIsInstalledAndAStartOfOneThatIsNotIsRefusedFirst() async throws {
        let daemon = try Daemon { $0.defaultDesktop = "openbox" }
        defer { daemon.remove() }
        let desktops = daemon.service.desktops()
        #expect(desktops.map(\.name) == ["auto", "gnome", "kde", "labwc", "lxqt", "mate", "openbox", "sway", "xfce", "xfce-wayland", "xterm"])
        let byName = Dictionary(uniqueKeysWithValues: desktops.map { ($0.name, $0) })
        #expect(byName["openbox"] == DesktopInfo(name: "openbox", installed: true, isDefault: true))
        #expect(byName["xterm"]?.installed == true && byName["auto"]?.starts == "openbox")
        #expect(byName["xfce"] == DesktopInfo(name: "xfce", installed: false, isDefault: false, missing: ["startxfce4", "dbus-launch"],
                                              install: "apt-get install xfce4 dbus-x11"))

        let before = daemon.host.events
        await #expect { try await daemon.service.start(StartRequest(desktop: "xfce"), caller: Self.alice) } throws: { error in
            let error = error as? DeskError
            return error?.code == .invalidDesktop && error?.message.contains("the desktop 'xfce' is not installed on this host (startxfce4, dbus-launch are missing)") == true
                && error?.message.contains("start one that is: auto, openbox, xterm") == true
        }
        #expect(daemon.host.events == before, "a refused start touched the host")
        // Installed later, it starts.
        daemon.host.state.withLock { $0.installed.formUnion(["/usr/bin/startxfce4", "/usr/bin/dbus-launch"]) }
        #expect(try await daemon.service.start(StartRequest(desktop: "xfce"), caller: Self.alice).desktop == "xfce")
        #expect(daemon.service.desktops().first { $0.name == "auto" }?.starts == "xfce")

        // auto is installed when one of its picks is; with none, it says what its last one needs.
        let bare = try Daemon()
        defer { bare.remove() }
        bare.host.state.withLock { $0.installed = [] }
        #expect(bare.service.desktops().first { $0.name == "auto" } == DesktopInfo(name: "auto", installed: false, isDefault: false, missing: ["xterm"], install: "apt-get install xterm"))
        await #expect { try await bare.service.start(StartRequest(desktop: "auto"), caller: Self.alice) } throws: {
            ($0 as? DeskError)?.message.contains("the desktop 'auto' is not installed on this host (xterm is missing)") == true
        }
    }

    @Test func concurrentStartsHoldToAPerUserLimitOfOne() async throws {
        let daemon = try Daemon { $0.limits.maxSessionsPerUser = 1 }
        defer { daemon.remove() }
        let outcomes = await withTaskGroup(of: DeskError.Code?.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    do {
                        _ = try await daemon.service.start(StartRequest(), caller: Self.alice)
                        return nil
                    } catch let error as DeskError {
                        return error.code
                    } catch {
                        return .internalError
                    }
                }
            }
            return await group.reduce(into: [DeskError.Code?]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 1)
        #expect(outcomes.filter { $0 == DeskError.Code.limitReached }.count == 5)
    }

    @Test func aProcessThatIgnoresSIGTERMIsKilledWithItsCgroup() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let session = try await daemon.service.start(StartRequest(), caller: Self.alice)
        daemon.host.state.withLock { _ = $0.stubborn.insert(session.pid) }
        let before = daemon.host.events.count
        _ = try await daemon.service.kill(.all, caller: Self.root)
        let events = Array(daemon.host.events.dropFirst(before))
        let term = try #require(events.firstIndex(of: "signal TERM")), kill = try #require(events.firstIndex(of: "kill cgroup"))
        #expect(term < kill)
        #expect(daemon.host.pids(of: session.id).isEmpty)
    }

    @Test func aSessionWhoseXvncExitsEndsOnItsOwnAndSaysSo() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let session = try await daemon.service.start(StartRequest(), caller: Self.alice)
        daemon.host.exit(session.pid)
        for _ in 0..<200 where await !daemon.service.list(all: true, caller: Self.root).isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        let ended = try #require(try daemon.auditTrail.first { $0.command == .ended })
        #expect(ended.outcome.contains("server exited") && ended.detail == "session=\(session.id)")
    }

    // MARK: Re-adoption

    @Test func aRestartedDaemonAdoptsLiveSessionsAndEndsDeadOnes() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let alive = try await daemon.service.start(StartRequest(), caller: Self.alice)
        let dead = try await daemon.service.start(StartRequest(), caller: Self.bob)
        // Bob's Xvnc died while no deskd was watching; another process now has its pid.
        // Both desktops are up (they start just after the reply) before the first deskd goes.
        for _ in 0..<400 where await daemon.service.list(all: true, caller: Self.root).contains(where: { $0.desktopPid == nil }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        // The first deskd is gone: nothing of its watches any process any more.
        daemon.host.state.withLock {
            $0.processes[dead.pid] = ("someone-else", ProcessIdentity(startTicks: 1, uid: 1002, executable: FakeHost.xvnc))
            $0.exitHandlers = [:]
        }

        let next = try daemon.restarted()
        await next.service.adoptRunningSessions()
        let listed = await next.service.list(all: true, caller: Self.root)
        #expect(listed.map(\.id) == [alive.id])
        #expect(listed.first?.state == .ready)
        #expect(!FileManager.default.fileExists(atPath: next.configuration.sessionRecordsDirectory + "/\(dead.id).json"))
        let ended = try #require(try next.auditTrail.last)
        #expect(ended.command == .ended && ended.user == "bob" && ended.outcome.contains("gone while deskd was away"), "\(ended)")
        // The pid's new owner is not the session's: it was left alone.
        #expect(next.host.identity(of: dead.pid) != nil)
    }

    @Test func aRecordNamingAnotherCgroupIsNotTrustedWithIt() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let session = try await daemon.service.start(StartRequest(), caller: Self.alice)
        daemon.host.state.withLock { $0.exitHandlers = [:] }
        // Whoever wrote the record file pointed its cgroup at the host's root cgroup.
        let path = daemon.configuration.sessionRecordsDirectory + "/\(session.id).json"
        var record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        #expect(record["cgroup"] as? String == "/sys/fs/cgroup/deskd/" + session.id)
        record["cgroup"] = "/sys/fs/cgroup"
        try JSONSerialization.data(withJSONObject: record).write(to: URL(fileURLWithPath: path))

        let next = try daemon.restarted()
        await next.service.adoptRunningSessions()
        #expect(await next.service.list(all: true, caller: Self.root).map(\.id) == [session.id])
        let before = next.host.events.count
        _ = try await next.service.kill(.display(session.display), caller: Self.alice)
        // The session ends by its processes; the cgroup it named is neither killed nor removed.
        #expect(next.host.state.withLock { $0.processes.isEmpty })
        #expect(!next.host.events.dropFirst(before).contains("remove cgroup"))
    }

    // MARK: Audit

    @Test func theAuditTrailRecordsTheEndBeforeTheKillAndARefusalForTheOwner() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let started = try await daemon.send(Request(command: .start, geometry: "1280x720"), as: Self.alice)
        let display = try #require(started.sessions?.first?.display)
        #expect(started.connect != nil)

        let refused = try await daemon.send(Request(command: .kill, display: display), as: Self.bob)
        #expect(refused.error?.code == .permissionDenied)
        let killed = try await daemon.send(Request(command: .kill, display: display), as: Self.alice)
        #expect(killed.sessions?.map(\.state) == [.exited])

        let trail = try daemon.auditTrail
        #expect(trail.map(\.command) == [.start, .kill, .ended, .kill])
        #expect(trail[0].detail == "desktop=xterm geometry=1280x720" && trail[0].outcome == "started")
        #expect(trail[1].peerUser == "bob" && trail[1].user == "alice" && trail[1].outcome == "permission-denied")
        #expect(trail[2].peerUser == "deskd" && trail[2].outcome.contains("killed by alice"))
        #expect(trail[3].outcome == "killed \(display) (alice)")
        #expect(!trail.contains { $0.detail?.contains(started.sessions?.first?.password ?? "-") == true })
    }

    @Test func onlyStateChangesAreAudited() {
        let audited = Command.allCases.filter { $0.auditAction != nil }
        #expect(Set(audited) == [.start, .kill, .reap, .passwd, .url, .extend])
        #expect(audited.allSatisfy { $0.auditAction?.rawValue == $0.rawValue })
    }

    // MARK: Browser links

    @Test func aLinkIsForTheOwnerOrAnAdminOfARunningSessionWhenTheGatewayIsOn() async throws {
        let off = try Daemon()
        defer { off.remove() }
        let session = try await off.service.start(StartRequest(), caller: Self.alice)
        await #expect { try await off.service.browserLink(session.display, viewOnly: false, ttlSeconds: 60, hostName: "desk", caller: Self.alice) }
            throws: { ($0 as? DeskError)?.code == .gatewayOff }

        let daemon = try Daemon { $0.web.host = "127.0.0.1"; $0.web.port = 8080 }
        defer { daemon.remove() }
        let mine = try await daemon.service.start(StartRequest(), caller: Self.alice)
        let link = try await daemon.service.browserLink(mine.display, viewOnly: true, ttlSeconds: 600, hostName: "desk", caller: Self.alice)
        #expect(link.url.hasPrefix("http://127.0.0.1:8080/open#token=") && link.viewOnly)
        await #expect { try await daemon.service.browserLink(mine.display, viewOnly: false, ttlSeconds: 60, hostName: "desk", caller: Self.bob) }
            throws: { ($0 as? DeskError)?.code == .permissionDenied }
        await #expect { try await daemon.service.browserLink(mine.display, viewOnly: false, ttlSeconds: 90_000, hostName: "desk", caller: Self.alice) }
            throws: { ($0 as? DeskError)?.code == .invalidDuration }
        _ = try await daemon.service.browserLink(mine.display, viewOnly: false, ttlSeconds: 60, hostName: "desk", caller: Self.root)

        // A session on a TCP port gets a link (the gateway relays to its port), unless its Xvnc
        // offers no VncAuth for the gateway to log in with: then no link that would not open.
        let tcp = try Daemon { $0.web.host = "127.0.0.1"; $0.vncExposure.listen = .loopback }
        defer { tcp.remove() }
        let onPort = try await tcp.service.start(StartRequest(), caller: Self.alice)
        _ = try await tcp.service.browserLink(onPort.display, viewOnly: false, ttlSeconds: 60, hostName: "desk", caller: Self.alice)
        let tls = try Daemon {
            $0.web.host = "127.0.0.1"; $0.vncExposure.listen = .loopback; $0.vncExposure.securityTypes = ["X509Vnc"]
        }
        defer { tls.remove() }
        let certified = try await tls.service.start(StartRequest(), caller: Self.alice)
        await #expect { try await tls.service.browserLink(certified.display, viewOnly: false, ttlSeconds: 60, hostName: "desk", caller: Self.alice) }
            throws: { ($0 as? DeskError)?.message.contains("network.security_types") == true }

        let token = String(link.url.split(separator: "=").last ?? "")
        let traded = try #require(daemon.service.environment.links.exchange(token: token))
        #expect(traded.grant.sessionID == mine.id && traded.grant.viewOnly)

        let reply = try await daemon.send(Request(command: .url, display: mine.display, viewOnly: true, ttlSeconds: 120), as: Self.alice)
        #expect(reply.link?.display == mine.display)
        let entry = try #require(try daemon.auditTrail.last)
        #expect(entry.command == .url && entry.outcome == "view-only link issued" && entry.detail == "ttl=120s view-only")
        #expect(!(entry.detail ?? "").contains(String(reply.link?.url.split(separator: "=").last ?? "-")))
    }

    // MARK: Idle

    @Test func anIdleSessionIsReapedAndOneWithAViewerIsKept() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let idle = try await daemon.service.start(StartRequest(), caller: Self.alice)
        let watched = try await daemon.service.start(StartRequest(), caller: Self.bob)
        daemon.host.state.withLock { $0.viewers[watched.id] = 1 }
        let later = Date().addingTimeInterval(3 * 3600)

        let wouldReap = try await daemon.service.reap(ReapRequest(idleSeconds: 7200, dryRun: true), caller: Self.root, now: later)
        #expect(wouldReap.map(\.id) == [idle.id])
        #expect(await daemon.service.list(all: true, caller: Self.root).count == 2)
        let onlyBobs = try await daemon.service.reap(ReapRequest(idleSeconds: 7200), caller: Self.bob, now: later)
        #expect(onlyBobs.isEmpty)
        let reaped = try await daemon.service.reap(ReapRequest(idleSeconds: 7200), caller: Self.root, now: later)
        #expect(reaped.map(\.id) == [idle.id])
        #expect(await daemon.service.list(all: true, caller: Self.root).map(\.id) == [watched.id])
    }

    // MARK: Metrics

    /// The value of one line of the metrics text, e.g. `deskd_sessions{state="ready"}`.
    static func metric(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func metricsCountStartsFailuresEndsAndWhatIsRunning() async throws {
        let daemon = try Daemon { $0.limits.maxSessionsPerUser = 1; $0.displayRange = 1...10 }
        defer { daemon.remove() }
        let first = try await daemon.service.start(StartRequest(), caller: Self.alice)
        _ = try await daemon.service.start(StartRequest(), caller: Self.bob)
        await #expect(throws: DeskError.self) { try await daemon.service.start(StartRequest(), caller: Self.alice) }
        _ = try await daemon.service.kill(.display(first.display), caller: Self.alice)

        let text = await daemon.service.metricsText()
        #expect(Self.metric("deskd_session_starts_total{result=\"started\"}", in: text) == 2, "\(text)")
        #expect(Self.metric("deskd_session_starts_total{result=\"failed\"}", in: text) == 1, "\(text)")
        #expect(Self.metric("deskd_session_start_failures_total{reason=\"limit-reached\"}", in: text) == 1, "\(text)")
        #expect(Self.metric("deskd_sessions_ended_total{reason=\"killed\"}", in: text) == 1, "\(text)")
        #expect(Self.metric("deskd_sessions_ended_total{reason=\"idle-limit\"}", in: text) == 0, "every reason is there from the start: \(text)")
        #expect(Self.metric("deskd_sessions{state=\"ready\"}", in: text) == 1, "\(text)")
        #expect(Self.metric("deskd_sessions{state=\"starting\"}", in: text) == 0, "\(text)")
        #expect(Self.metric("deskd_displays_free", in: text) == 9, "\(text)")
        #expect(Self.metric("deskd_session_start_seconds_count", in: text) == 2, "\(text)")
        #expect(Self.metric("deskd_viewers{kind=\"browser\"}", in: text) == 0, "\(text)")
        #expect(text.contains("# TYPE deskd_sessions gauge") && text.contains("# TYPE deskd_session_starts_total counter"), "\(text)")
        #expect(!text.contains("alice") && !text.contains("bob"), "a metric names a user")

        // Over the control socket, for admins only.
        let refused = try await daemon.send(Request(command: .metrics), as: Self.alice)
        #expect(refused.deskError?.code == .permissionDenied)
        let answered = try await daemon.send(Request(command: .metrics), as: Self.root)
        #expect(answered.metrics?.contains("deskd_sessions{state=\"ready\"} 1") == true, "\(answered.metrics ?? "")")
    }

    @Test func startForTheBrowserIsRefusedBeforeAnythingStartsWhenTheGatewayIsOff() async throws {
        let daemon = try Daemon()
        defer { daemon.remove() }
        let before = daemon.host.events
        await #expect { try await daemon.service.startForBrowser(StartRequest(linkTTLSeconds: 60), hostName: "host", caller: Self.alice) }
            throws: { ($0 as? DeskError)?.code == .gatewayOff }
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)
        #expect(daemon.host.events == before, "a refused start --web touched the host")
    }

    @Test func startForTheBrowserHandsOutALinkToTheNewSession() async throws {
        let daemon = try Daemon { $0.web.host = "127.0.0.1"; $0.web.port = 8443 }
        defer { daemon.remove() }
        let (session, link) = try await daemon.service.startForBrowser(StartRequest(linkTTLSeconds: 600), hostName: "host", caller: Self.alice)
        let made = try #require(link)
        #expect(made.display == session.display && !made.viewOnly)
        #expect(made.url.hasPrefix("http://127.0.0.1:8443/open#token="))
        await #expect { try await daemon.service.startForBrowser(StartRequest(linkTTLSeconds: 0), hostName: "host", caller: Self.alice) }
            throws: { ($0 as? DeskError)?.code == .invalidDuration }

        // Through the control socket: the link is in the reply, and the audit trail says one was issued.
        let reply = try await daemon.send(Request(command: .start, ttlSeconds: 120, web: true), as: Self.bob)
        #expect(reply.ok && reply.link?.display == reply.sessions?.first?.display, "\(reply)")
        let entry = try #require(try daemon.auditTrail.last { $0.command == .start })
        #expect(entry.outcome == "started, link issued" && entry.detail?.contains("web ttl=120s") == true, "\(entry)")
        #expect(!(entry.detail ?? "").contains(reply.link?.url.split(separator: "=").last.map(String.init) ?? "-"), "the token reached the audit trail")
    }

    // MARK: Admission by memory

    @Test func aStartThatWouldEatIntoTheReserveIsRefusedWithTheNumbers() async throws {
        let host = FakeHost()
        host.state.withLock { $0.memoryAvailable = 3 << 30 }
        let daemon = try Daemon(host: host) { $0.memoryReserve = 2 << 30; $0.memoryPerSession = 512 << 20 }
        defer { daemon.remove() }
        let status = await daemon.service.status()
        #expect(status.memoryAvailable == 3 << 30 && status.memoryReserve == 2 << 30 && status.sessionsMemoryAllows == 2)
        #expect(StatusText.render(status).contains("memory   3 GiB available; reserve 2 GiB, room for 2 more desktops"), "\(StatusText.render(status))")

        _ = try await daemon.service.start(StartRequest(), caller: Self.alice)
        host.state.withLock { $0.memoryAvailable = (2 << 30) + (256 << 20) }
        let before = daemon.host.events
        await #expect {
            try await daemon.service.start(StartRequest(), caller: Self.bob)
        } throws: { error in
            let error = error as? DeskError
            return error?.code == .memoryLow && error?.message.contains("leave 1.8 GiB of memory available (") == true
                && error?.message.contains("2.3 GiB now, less limits.memory_per_session 512 MiB), under limits.memory_reserve 2 GiB") == true
        }
        #expect(daemon.host.events == before, "a refused start touched the host")
        #expect(await daemon.service.status().sessionsMemoryAllows == 0)
        #expect(await daemon.service.list(all: true, caller: Self.root).count == 1)
    }

    // MARK: Accounts that cannot log in

    @Test func accountsThatCannotLogInGetNoDesktopUnlessTheAdminSaysSo() async throws {
        let host = FakeHost()
        host.state.withLock { state in
            state.accounts.append(UserAccount(name: "daemonish", uid: 1500, gid: 1500, home: "/home/daemonish", shell: "/usr/sbin/nologin", groups: [1500]))
            state.accounts.append(UserAccount(name: "nobody", uid: 65534, gid: 65534, home: "/nonexistent", shell: "/usr/sbin/nologin", groups: [65534]))
            state.missingHomes.insert("/home/alice")
        }
        let daemon = try Daemon(host: host)
        defer { daemon.remove() }
        for (user, words) in [("daemonish", "their shell is /usr/sbin/nologin"), ("nobody", "is the overflow account"), ("alice", "/home/alice does not exist")] {
            await #expect { try await daemon.service.start(StartRequest(user: user), caller: Self.root) } throws: { error in
                (error as? DeskError)?.code == .userNotAllowed && (error as? DeskError)?.message.contains(words) == true
            }
        }
        #expect(await daemon.service.list(all: true, caller: Self.root).isEmpty)

        let lenient = try Daemon(host: host) { $0.requireLoginShell = false }
        defer { lenient.remove() }
        _ = try await lenient.service.start(StartRequest(user: "alice"), caller: Self.root)
    }
}

/// GNOME 49 and later, and Plasma 6.8, install their commands but only a Wayland session: Xvnc
/// cannot serve them, so they are shown as not startable here, with why; auto passes them over;
/// and a start that names one is refused with a sentence, not answered with a desktop that dies.
@Suite struct WaylandOnlyDesktopTests {
    @Test func aDesktopWithoutItsX11SessionIsShownRefusedAndPassedOver() async throws {
        let daemon = try SessionServiceTests.Daemon()
        defer { daemon.remove() }
        daemon.host.state.withLock { $0.installed.formUnion(["/usr/bin/gnome-session", "/usr/bin/dbus-launch"]) }
        let gnome = try #require(daemon.service.desktops().first { $0.name == "gnome" })
        #expect(gnome.installed && !gnome.canStart)
        #expect(gnome.unstartable?.contains("GNOME 49 and later run only on Wayland") == true, "\(gnome)")
        #expect(gnome.unstartable?.contains("/usr/share/xsessions/gnome.desktop") == true)
        #expect(daemon.service.desktops().first { $0.name == "auto" }?.starts != "gnome", "auto picked a desktop that cannot start")
        #expect(DesktopTable.render([gnome]).contains("cannot start here: GNOME 49 and later run only on Wayland"))

        let before = daemon.host.events
        await #expect { try await daemon.service.start(StartRequest(desktop: "gnome"), caller: SessionServiceTests.alice) } throws: { error in
            let error = error as? DeskError
            return error?.code == .invalidDesktop && error?.message.hasPrefix("the desktop 'gnome' cannot start on this host: GNOME 49") == true
                && error?.message.contains("desktops that start here: auto,") == true
        }
        #expect(daemon.host.events == before, "a refused start touched the host")

        // GNOME with its X11 session (GNOME 48 and earlier) starts, and auto picks it first.
        _ = daemon.host.state.withLock { $0.installed.insert("/usr/share/xsessions/gnome-xorg.desktop") }
        #expect(daemon.service.desktops().first { $0.name == "gnome" }?.canStart == true)
        #expect(daemon.service.desktops().first { $0.name == "auto" }?.starts == "gnome")
    }
}
