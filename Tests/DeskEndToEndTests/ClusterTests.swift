import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// The one-machine Slurm lab (scripts/slurm-lab): login (slurmctld and deskd), node1 and node2,
/// each in namespaces of its own. One per test: up in about a second, down in less.
final class SlurmLab {
    static let script = TestEnvironment.repository.appendingPathComponent("scripts/slurm-lab").path
    static let intruder = TestEnvironment.repository.appendingPathComponent("Tests/cluster/hop_intruder.py").path
    static let isInstalled = ["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch"].allSatisfy { (path: String) in access(path, X_OK) == 0 }
    static let skipReason: Comment = "cluster tests need Slurm and munge (slurmctld slurmd slurm-client munge); scripts/install-deps installs them"

    init() throws {
        // A lab a failed run left behind would refuse `up`: take it down first.
        _ = Self.run(["down"])
        let up = Self.run(["up", "--bin", TestEnvironment.products.path])
        guard up.status == 0 else { throw LabFailed(what: "scripts/slurm-lab up", output: up.stdout + up.stderr) }
    }

    func down() {
        _ = Self.run(["down"])
    }

    /// scripts/slurm-lab with `arguments`, through posix_spawn and waitpid: Foundation's Process
    /// never saw `up` exit (its child starts the lab with setsid and leaves it running), and
    /// waited for ever on a zombie.
    static func run(_ arguments: [String], timeout: Duration = .seconds(600)) -> CommandResult {
        let environment = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/root"]
        guard let outcome = CommandRunner.run(script, arguments, environment: environment, timeout: timeout) else {
            return CommandResult(status: -1, stdout: "", stderr: "could not run \(script)")
        }
        return CommandResult(status: outcome.status ?? -1, stdout: outcome.output, stderr: outcome.errors)
    }

    struct LabFailed: Error, CustomStringConvertible {
        let what: String
        let output: String
        var description: String { "\(what) failed: \(output)" }
    }

    /// CMD on a machine of the lab (its network, hostname, mounts and processes), as root or `user`.
    func exec(_ machine: String, user: String? = nil, _ command: [String]) throws -> CommandResult {
        Self.run(["exec", machine] + (user.map { ["--user", $0] } ?? []) + ["--"] + command, timeout: .seconds(120))
    }

    /// deskctl on the login machine, as `user`, against the lab's deskd.
    func deskctl(_ arguments: [String], as user: String) throws -> CommandResult {
        try exec("login", user: user, [TestEnvironment.deskctl] + arguments)
    }

    func sessions(of user: String) throws -> [Session] {
        struct Listing: Decodable { let sessions: [Session] }
        return try deskctl(["list", "--json"], as: user).decode(Listing.self).sessions
    }

    /// Live processes of `account` on `machine`: pid and command name, zombies left out.
    func processes(of account: UserAccount, on machine: String) -> [(pid: Int, command: String)] {
        guard let ps = try? exec(machine, ["ps", "-u", account.name, "-o", "pid=,stat=,comm="]) else { return [] }
        return ps.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 3, !fields[1].hasPrefix("Z"), let pid = Int(fields[0]) else { return nil }
            return (pid, fields[2...].joined(separator: " "))
        }
    }

    /// The ended-session entry deskd's audit trail has for `display`, most recent first.
    func endReason(of display: Display, as user: String) throws -> String? {
        let history = try deskctl(["history", "--json"], as: user).decode([AuditEntry].self)
        return history.last { $0.command == .ended && $0.display == display }?.outcome
    }

    /// The port deskd-job's relay listens on, on `node`.
    func relayPort(on node: String) throws -> Int? {
        let ss = try exec(node, ["ss", "-Hltnp"])
        for line in ss.stdout.split(separator: "\n") where line.contains("\"deskd-job\"") {
            let local = line.split(separator: " ", omittingEmptySubsequences: true)[3]
            if let port = local.split(separator: ":").last.flatMap({ Int($0) }) { return port }
        }
        return nil
    }

    /// The intruder's report on a hop (Tests/cluster/hop_intruder.py), run as `user` on the login machine.
    struct Intrusion: Decodable {
        let connected: Bool
        let challenged: Bool
        let accepted: Bool
        let rfb: Bool
        let received: String
    }

    func intrude(as user: String, _ arguments: [String]) throws -> Intrusion {
        let run = try exec("login", user: user, ["/usr/bin/python3", Self.intruder] + arguments)
        return try JSONDecoder().decode(Intrusion.self, from: Data(run.stdout.utf8))
    }
}

/// Desktops as Slurm jobs on the lab's nodes, end to end: real sbatch as the user, deskd-job on
/// a node running real Xtigervnc, the report hop back to deskd, the gateway's relay through the
/// job, real Chromium; and the ways a job ends, each leaving nothing on its node.
extension EndToEnd {
@Suite(.serialized, .enabled(if: SlurmLab.isInstalled, SlurmLab.skipReason))
struct ClusterTests {
    static let nodes = ["node1", "node2"]

    /// Starts a cluster desktop for `user` and returns it once deskd says it is ready.
    static func startReady(_ lab: SlurmLab, _ user: UserAccount, _ extra: [String] = []) throws -> Session {
        let started = try lab.deskctl(["start", "--slurm", "--json"] + extra, as: user.name)
        #expect(started.status == 0, "\(started.stderr)")
        let session = try started.decode(Session.self)
        #expect(session.state == .ready, "\(started.stdout)")
        return session
    }

    /// The session is gone from `list` within `seconds`, `history` gives `reason`, and nothing of
    /// the user's runs on `node` any more (non-zombies: the double-forked and TERM-ignoring ones
    /// of the "escaping" and "brief" desktops included).
    static func expectEnded(_ lab: SlurmLab, _ user: UserAccount, _ session: Session, on node: String, within seconds: Double,
                            reason: String) throws {
        #expect(eventually(seconds) { (try? lab.sessions(of: user.name).isEmpty) ?? false })
        #expect(try lab.endReason(of: session.display, as: user.name)?.contains(reason) == true)
        #expect(eventually(10) { lab.processes(of: user, on: node).isEmpty }, "\(lab.processes(of: user, on: node))")
    }

    @Test func aClusterDesktopRunsOnANodeAndOpensInABrowser() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        let session = try Self.startReady(lab, alice, ["--desktop", "escaping"])
        let job = try #require(session.slurm)
        let node = try #require(job.node)
        #expect(Self.nodes.contains(node))
        #expect(job.state == "RUNNING" || job.state == "PENDING")
        #expect(session.password?.count == 8)
        // Xvnc and the desktop are the job's, as the user, on the node: nothing of them on login.
        #expect(lab.processes(of: alice, on: node).contains { $0.command == "Xtigervnc" })
        #expect(!lab.processes(of: alice, on: "login").contains { $0.command == "Xtigervnc" })

        // list shows where it runs and the time it has left.
        let table = try lab.deskctl(["list"], as: alice.name)
        #expect(table.stdout.contains("WHERE") && table.stdout.contains("\(node) (job \(job.jobId))"), "\(table.stdout)")
        #expect(eventually(5) { (try? lab.sessions(of: alice.name).first?.slurm?.endsAt) != nil })

        // A real RFB login with the session's password, through the gateway's path: the hop, then VNC auth.
        let probe = try lab.deskctl(["probe", session.display.description, "--json"], as: alice.name)
        #expect(probe.status == 0, "\(probe.stderr)")
        let report = try probe.decode(ProbeReport.self)
        #expect(report.answered && report.width == 1920 && report.height == 1080, "\(probe.stdout)")

        // A real Chromium on the login machine opens it through deskd's gateway.
        if BrowserHarness.isReady {
            let url = try lab.deskctl(["url", session.display.description, "--json"], as: alice.name)
            #expect(url.status == 0, "\(url.stderr)")
            let link = try url.decode(BrowserLink.self)
            let shot = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-cluster-\(getpid()).png").path
            let run = try BrowserHarness.open(link.url, screenshot: shot, networkNamespace: "dsl-login")
            #expect(run.status == 0 && run.outcome.connected && run.outcome.nonBlank, "\(run.outcome.summary) \(run.stderr)")
        }

        // deskctl kill cancels the job; every process of the desktop ends on the node, the
        // double-forked one and the one that ignores SIGTERM included.
        let kill = try lab.deskctl(["kill", session.display.description], as: alice.name)
        #expect(kill.status == 0, "\(kill.stderr)")
        #expect(try lab.sessions(of: alice.name).isEmpty)
        #expect(eventually(10) { lab.processes(of: alice, on: node).isEmpty }, "\(lab.processes(of: alice, on: node))")
        // The job ends: cancelled, or completed if deskd-job, told to end first, was quicker.
        var state = ""
        #expect(eventually(15) {
            state = (try? lab.exec("login", ["squeue", "--noheader", "--states=all", "--jobs=\(job.jobId)", "--format=%T"]).stdout) ?? ""
            return state.contains("CANCELLED") || state.contains("COMPLETED")
        }, "\(state)")
    }

    /// Files through the portal for a desktop that runs on a node (issue 50): deskd-files runs
    /// on the login node, as the owner, and the node sees the same home. An upload through the
    /// login node's gateway is read back on the node; a file the user made on the node comes
    /// down through the gateway.
    @Test func aClusterDesktopsOwnerMovesFilesThroughTheLoginNodesGateway() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-clf")
        let password = try PortalTests.givePassword(to: alice)
        let fromNode = alice.home + "/made-on-the-node.txt", downloads = alice.home + "/Downloads"
        defer {
            lab.down()
            unlink(fromNode)
            _ = try? CommandResult.run("/bin/rm", ["-rf", downloads])
            TestUsers.reap(alice)
        }
        let session = try Self.startReady(lab, alice)
        let node = try #require(session.slurm?.node)
        let made = try lab.exec(node, user: alice.name, ["/bin/sh", "-c", "echo \"made on $(hostname)\" > \"$1\"", "sh", fromNode])
        #expect(made.status == 0, "\(made.stderr)")
        let url = try lab.deskctl(["url", session.display.description, "--json"], as: alice.name).decode(BrowserLink.self).url
        let parts = try #require(URLComponents(string: url))
        let base = "\(parts.scheme ?? "http")://\(parts.host ?? "127.0.0.1"):\(parts.port ?? 80)"

        let run = try lab.exec("login", ["/usr/bin/python3", TestEnvironment.repository.appendingPathComponent("Tests/cluster/files_through_login.py").path,
                                          base, alice.name, password, session.id, "made-on-the-node.txt"])
        print("ClusterTests: files through the login node's gateway → \(run.stdout)\(run.stderr.suffix(2000))")
        let result = try PortalTests.json(run.stdout)
        #expect(result["login"] as? Int == 200 && result["begin"] as? Int == 201 && result["put"] as? Int == 201, "\(result)")
        #expect(result["listing"] as? [String] == ["from the browser.txt"], "\(result["listing"] ?? "")")
        #expect(result["fromNode"] as? String == "made on \(node)\n", "\(result["fromNode"] ?? "")")
        // The desktop's node reads the upload from the same home: same bytes, the owner's file.
        let seen = try lab.exec(node, user: alice.name, ["/usr/bin/sha256sum", downloads + "/from the browser.txt"])
        #expect(seen.stdout.hasPrefix(result["uploadedSha256"] as? String ?? "-"), "the node does not see the upload: \(seen.stdout)\(seen.stderr)")
        _ = try lab.deskctl(["kill", session.display.description], as: alice.name)
    }

    /// A Wayland desktop as a Slurm job (issue 43): sway headless with wayvnc on the job's
    /// socket, through the same seam as on the login node; deskd reaches it through the hop with
    /// no password, Chromium shows it through the gateway, a view-only browser's keys go
    /// nowhere, and kill leaves nothing on the node.
    @Test(.enabled(if: WaylandPrograms.missing.isEmpty, "a Wayland desktop needs sway, wayvnc, foot and Xwayland (scripts/install-deps)"))
    func aWaylandDesktopRunsOnANodeThroughTheSameSeam() throws {
        let lab = try SlurmLab()
        let wren = try TestUsers.ensure("deskt-cl-wren")
        defer { lab.down(); TestUsers.reap(wren) }

        let session = try Self.startReady(lab, wren, ["--desktop", "sway", "--geometry", "1280x800"])
        let node = try #require(session.slurm?.node)
        #expect(session.displayServer == .wayland && session.password == nil, "\(session)")
        let onNode = lab.processes(of: wren, on: node).map(\.command)
        #expect(onNode.contains("sway") && onNode.contains("wayvnc") && onNode.contains("foot"), "\(onNode)")
        #expect(!onNode.contains("Xtigervnc"))

        // A real RFB login through the hop, security type None: wayvnc's own name and the size asked.
        let probe = try lab.deskctl(["probe", session.display.description, "--json"], as: wren.name)
        let report = try probe.decode(ProbeReport.self)
        #expect(report.answered && report.desktopName == "WayVNC" && report.width == 1280 && report.height == 800, "\(probe.stdout)\(probe.stderr)")

        if BrowserHarness.isReady {
            let link = try lab.deskctl(["url", session.display.description, "--json"], as: wren.name).decode(BrowserLink.self)
            let shot = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-cluster-wayland-\(getpid()).png").path
            let run = try BrowserHarness.open(link.url, screenshot: shot, viewport: "1280x800", networkNamespace: "dsl-login")
            #expect(run.status == 0 && run.outcome.connected && run.outcome.distinctColours > 2, "\(run.outcome.summary) \(run.stderr)")
            // A view-only browser that types anyway (the harness turns noVNC's view-only off):
            // the gateway drops its keys, as for an Xvnc desktop.
            let watched = wren.home + "/cluster-watched-\(UUID().uuidString.prefix(6).lowercased())"
            defer { unlink(watched) }
            let viewOnly = try lab.deskctl(["url", session.display.description, "--view-only", "--json"], as: wren.name).decode(BrowserLink.self)
            let view = try BrowserHarness.open(viewOnly.url, type: "touch \(watched)", ignoreViewOnly: true, viewport: "1280x800", networkNamespace: "dsl-login")
            #expect(view.outcome.connected, "\(view.outcome.summary)")
            Thread.sleep(forTimeInterval: 1)
            #expect(access(watched, F_OK) != 0, "a view-only browser typed into a cluster Wayland desktop")
        }

        let kill = try lab.deskctl(["kill", session.display.description], as: wren.name)
        #expect(kill.status == 0, "\(kill.stderr)")
        #expect(eventually(10) { lab.processes(of: wren, on: node).isEmpty }, "\(lab.processes(of: wren, on: node))")
    }

    @Test func anotherUserCannotReachKillOrImpersonateIt() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        let mallory = try TestUsers.ensure("deskt-cl2")
        defer { lab.down(); TestUsers.reap(alice); TestUsers.reap(mallory) }

        let session = try Self.startReady(lab, alice)
        let node = try #require(session.slurm?.node)
        let display = session.display.description

        // deskctl: not listed, not killed, no link, no probe.
        #expect(try lab.sessions(of: mallory.name).isEmpty)
        for verb in [["kill", display], ["url", display], ["probe", display], ["show", display]] {
            let refused = try lab.deskctl(verb, as: mallory.name)
            #expect(refused.status != 0 && refused.stderr.contains("another user"), "\(verb): \(refused.stderr)")
        }

        // The job's relay on the node: a viewer's RFB gets nothing, and a hop without the key
        // is refused before a byte of the desktop.
        let port = try #require(try lab.relayPort(on: node))
        let address = node == "node1" ? "10.77.0.11" : "10.77.0.12"
        let raw = try lab.intrude(as: mallory.name, ["raw", address, String(port)])
        #expect(raw.connected && !raw.rfb && !raw.accepted, "\(raw)")
        let relay = try lab.intrude(as: mallory.name, ["forge", address, String(port), "relay", session.id])
        #expect(relay.connected && !relay.accepted && !relay.rfb, "\(relay)")

        // deskd's report listener: posing as alice's job (to point the gateway elsewhere) is refused.
        let report = try lab.intrude(as: mallory.name, ["forge", "10.77.0.1", "7010", "report", session.id])
        #expect(report.connected && !report.accepted, "\(report)")

        // Alice's desktop is untouched and still answers through its own relay.
        #expect(try lab.sessions(of: alice.name).first?.state == .ready)
        let probe = try lab.deskctl(["probe", display, "--json"], as: alice.name).decode(ProbeReport.self)
        #expect(probe.answered)
    }

    @Test func scancelByTheUserEndsTheSessionAndEveryProcess() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        let session = try Self.startReady(lab, alice, ["--desktop", "escaping"])
        let job = try #require(session.slurm)
        let node = try #require(job.node)
        #expect(lab.processes(of: alice, on: node).count >= 4)
        let cancel = try lab.exec("login", user: alice.name, ["scancel", job.jobId])
        #expect(cancel.status == 0, "\(cancel.stderr)")
        try Self.expectEnded(lab, alice, session, on: node, within: 10, reason: "Slurm job CANCELLED")
    }

    @Test func theDesktopLoggingOutEndsItsJob() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        // "brief" leaves a double-forked and a TERM-ignoring process, and logs out after 6 s.
        let session = try Self.startReady(lab, alice, ["--desktop", "brief"])
        let node = try #require(session.slurm?.node)
        try Self.expectEnded(lab, alice, session, on: node, within: 30, reason: "Slurm job COMPLETED")
    }

    @Test func theTimeLimitWarnsTheUserThenEndsTheSession() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        // One minute, and the lab's warn_before is 30 s: Slurm signals at ~+27 s (it checks
        // limits every ~30 s) and ends the job at ~+90 s.
        let session = try Self.startReady(lab, alice, ["--desktop", "escaping", "--time", "1"])
        let node = try #require(session.slurm?.node)
        #expect(session.slurm?.timeLimit == "1" || session.slurm?.timeLimit == "1:00")
        #expect(eventually(60) { lab.processes(of: alice, on: node).contains { $0.command == "xmessage" } }, "no warning on the desktop")
        try Self.expectEnded(lab, alice, session, on: node, within: 120, reason: "Slurm job TIMEOUT")
    }

    /// The site's limits and Slurm's, as the lab has them: partition short's MaxTime 0:30:00,
    /// nodes of 2 CPUs and no GPU, max_time 2 h, extend_max 1 h. A start over any is refused
    /// before sbatch; Extend raises the job's limit in Slurm itself, within the site's hour.
    @Test func theFormsLimitsAreCheckedBeforeSbatchAndExtendMakesTheJobLonger() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1"), bob = try TestUsers.ensure("deskt-cl2")
        defer { lab.down(); TestUsers.reap(alice); TestUsers.reap(bob) }

        let offered = try lab.deskctl(["desktops"], as: alice.name)
        #expect(offered.stdout.contains("debug (default)") && offered.stdout.contains("short") && offered.stdout.contains("0:30:00")
                && offered.stdout.contains("at most 2:00:00") && offered.stdout.contains("up to 1:00:00"), "\(offered.stdout)")
        for (extra, sentence) in [(["--partition", "short", "--time", "1:00:00"], "partition short lets a job run 0:30:00 at most"),
                                  (["--time", "3:00:00"], "2:00:00 at most ([slurm] max_time)"),
                                  (["--cores", "3"], "have 2 cores"), (["--gres", "gpu:1"], "have no GPU"),
                                  (["--partition", "nope"], "no partition 'nope'")] {
            let refused = try lab.deskctl(["start", "--slurm"] + extra, as: alice.name)
            #expect(refused.status != 0 && refused.stderr.contains(sentence), "\(extra): \(refused.stderr)")
        }
        let jobs = try lab.exec("login", ["squeue", "--noheader", "--states=all", "--format=%i"])
        #expect(jobs.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "a refused start reached Slurm: \(jobs.stdout)")

        let session = try Self.startReady(lab, alice, ["--time", "10", "--cores", "2"])
        let job = try #require(session.slurm?.jobId)
        func limit() throws -> String {
            try lab.exec("login", ["squeue", "--noheader", "--job", job, "--format=%l"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try limit() == "10:00")
        #expect(try lab.deskctl(["extend", session.display.description, "--by", "30m"], as: bob.name).status != 0, "another user extended it")
        let extended = try lab.deskctl(["extend", session.display.description, "--by", "30m"], as: alice.name)
        #expect(extended.status == 0 && extended.stdout.contains("0:30:00 longer"), "\(extended.stdout)\(extended.stderr)")
        #expect(try limit() == "40:00", "Slurm's limit did not grow")
        let over = try lab.deskctl(["extend", session.display.description, "--by", "45m"], as: alice.name)
        #expect(over.status != 0 && over.stderr.contains("0:30:00 longer at most"), "\(over.stderr)")
        #expect(try lab.deskctl(["extend", session.display.description, "--by", "30m"], as: alice.name).status == 0)
        #expect(try limit() == "1:10:00")
        #expect(eventually(10) { (try? lab.sessions(of: alice.name).first?.slurm?.timeLimit) == "1:10:00" }, "deskd did not see the new limit")
        #expect(try lab.sessions(of: alice.name).first?.slurm?.extendedSeconds == 3600)
    }

    @Test func aNodeFailureEndsTheSessionAndTheJobStillCleansUp() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        let session = try Self.startReady(lab, alice, ["--desktop", "escaping"])
        let node = try #require(session.slurm?.node)
        let down = SlurmLab.run(["node-down", node])
        #expect(down.status == 0, "\(down.stderr)")
        // slurmctld declares the node DOWN after ~27 s; with --no-requeue the job is NODE_FAIL.
        // slurmd is gone, so nothing of Slurm's ends the processes: deskd told the job to.
        try Self.expectEnded(lab, alice, session, on: node, within: 90, reason: "Slurm job NODE_FAIL")
    }

    @Test func idleReapingEndsAnIdleClusterDesktop() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        let session = try Self.startReady(lab, alice)
        let node = try #require(session.slurm?.node)
        #expect(eventually(10) { ((try? lab.sessions(of: alice.name).first?.idleSeconds) ?? 0) >= 3 })
        let reap = try lab.deskctl(["reap", "--idle", "3s"], as: alice.name)
        #expect(reap.status == 0 && reap.stdout.contains("Killed \(session.display)"), "\(reap.stdout)\(reap.stderr)")
        #expect(try lab.sessions(of: alice.name).isEmpty)
        #expect(eventually(10) { lab.processes(of: alice, on: node).isEmpty })
    }

    @Test func aQueuedDesktopShowsSlurmsReasonThenStarts() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        let drain = try lab.exec("login", ["scontrol", "update", "NodeName=node[1-2]", "State=DRAIN", "Reason=cluster-test"])
        #expect(drain.status == 0, "\(drain.stderr)")
        let started = try lab.deskctl(["start", "--slurm"], as: alice.name)
        #expect(started.status == 0 && started.stdout.contains("queued"), "\(started.stdout)\(started.stderr)")
        let queued = try #require(try lab.sessions(of: alice.name).first)
        #expect(queued.state == .queued)
        #expect(queued.slurm?.reason?.isEmpty == false, "\(String(describing: queued.slurm))")
        #expect(try lab.deskctl(["list"], as: alice.name).stdout.contains("job \(queued.slurm?.jobId ?? "?"): "))

        _ = try lab.exec("login", ["scontrol", "update", "NodeName=node[1-2]", "State=RESUME"])
        #expect(eventually(30) { (try? lab.sessions(of: alice.name).first?.state) == .ready })
    }

    @Test func aRestartedDeskdAdoptsItsClusterDesktops() throws {
        let lab = try SlurmLab()
        let alice = try TestUsers.ensure("deskt-cl1")
        defer { lab.down(); TestUsers.reap(alice) }

        let session = try Self.startReady(lab, alice)
        let restart = SlurmLab.run(["deskd-restart"])
        #expect(restart.status == 0, "\(restart.stderr)")
        #expect(try lab.sessions(of: alice.name).map(\.id) == [session.id])
        // The job reports back in to the new deskd, and its relay answers again.
        #expect(eventually(15) {
            (try? lab.deskctl(["probe", session.display.description, "--json"], as: alice.name).decode(ProbeReport.self).answered) ?? false
        })
    }
}

/// deskd-job alone, without Slurm (Tests/cluster/job-selftest.py): a Python deskd and gateway
/// drive the real binary as a throwaway user: the report and relay hops, refusals without the
/// key, viewers counted, the time warning on the desktop, and every way it ends leaving nothing.
@Suite struct DeskdJobTests {
    @Test func deskdJobPassesItsSelfTest() throws {
        let script = TestEnvironment.repository.appendingPathComponent("Tests/cluster/job-selftest.py").path
        let job = TestEnvironment.products.appendingPathComponent("deskd-job").path
        let run = try CommandResult.run("/usr/bin/python3", [script, "--job", job])
        #expect(run.status == 0, "\(run.stdout.suffix(3000))\(run.stderr.suffix(2000))")
    }
}
}
