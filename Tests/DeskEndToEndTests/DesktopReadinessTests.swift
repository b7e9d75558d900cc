import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// When a desktop counts as started (issue 27): once a process of its session holds an X
/// connection, whichever process that is. The xstartups people have do not `exec` their
/// desktop: a shell runs it as a child (a user's ~/.vnc/xstartup, Debian's Xtigervnc-session),
/// or starts it in the background and exits (the VNC guides' `gnome-session &`).
extension EndToEnd {
    @Suite struct DesktopReadinessTests {
        /// The shell stays and its child opens the display only once the test opens a gate:
        /// `start` waits past the one second deskd used to wait, does not take another user's
        /// connection (refused for want of the cookie) for the desktop's, and answers once the
        /// child has connected, with the child connected.
        @Test func aDesktopWhoseShellsChildOpensTheDisplayIsReadyOnceTheChildConnects() throws {
            let ana = try TestUsers.ensure("deskt-ana")
            let mallory = try TestUsers.ensure("deskt-mallory")
            let templates = "/tmp/deskt-templates-ready-\(getpid())"
            let gate = "/tmp/deskt-gate-\(getpid())"
            try FileManager.default.createDirectory(atPath: templates, withIntermediateDirectories: true)
            try """
            #!/bin/sh
            while [ ! -e \(gate) ]; do sleep 0.05; done
            xprop -root -spy >/dev/null
            echo the child is done
            """.write(toFile: templates + "/child.xstartup", atomically: true, encoding: .utf8)
            let daemon = try DaemonUnderTest(config: "[sessions]\ntemplates = [\"\(templates)\"]\nstart_timeout = \"60s\"\n")
            defer {
                daemon.shutDown()
                TestUsers.reap(ana); TestUsers.reap(mallory)
                try? FileManager.default.removeItem(atPath: templates)
                unlink(gate)
            }

            let deskctl = TestEnvironment.deskctl, socket = daemon.socket, user = ana.name
            let answer = StartInBackground { try CommandResult.run(deskctl, ["start", "--user", user, "--desktop", "child", "--json", "--socket", socket]) }
            // Xvnc answers and the shell runs, but nothing of the session is on the display yet.
            #expect(eventually(20) { !TestUsers.processes(of: ana).filter { Self.commandLine(of: $0).hasPrefix("/bin/sh ") }.isEmpty })
            let display = try #require(eventually(20) { Self.xvncDisplay(of: ana) != nil } ? Self.xvncDisplay(of: ana) : nil)
            // Another user knocks on the display meanwhile; the X server refuses them, and deskd
            // must not count their connection as the desktop's.
            for _ in 0..<10 {
                _ = try CommandResult.run("/usr/sbin/runuser", ["-u", mallory.name, "--", "/usr/bin/xdpyinfo", "-display", ":\(display)"])
            }
            usleep(1_500_000)
            #expect(answer.result == nil, "start answered before the desktop reached its display")

            #expect(FileManager.default.createFile(atPath: gate, contents: nil))
            let started = try #require(answer.wait(seconds: 30), "start did not answer once the child connected")
            #expect(started.status == 0, "\(started.stderr)\n\(daemon.logText)")
            let session = try started.decode(Session.self)
            #expect(session.state == .ready)
            // The child, not the shell, is what reached the display, and it is still there.
            let child = try #require(TestUsers.processes(of: ana).first { Self.commandLine(of: $0) == "xprop -root -spy" })
            #expect(ProcFS.process(child).map { Self.commandLine(of: $0.parent).hasPrefix("/bin/sh ") } == true)
        }

        /// `dbus-launch --exit-with-session gnome-session &` as the last line: the script exits 0
        /// at once and leaves its X clients running. The session stays while they do, says so in
        /// the desktop's log, and ends with the last of them.
        @Test func aBackgroundedDesktopKeepsItsSessionWhileItsClientsLive() throws {
            let bea = try TestUsers.ensure("deskt-bea")
            let templates = "/tmp/deskt-templates-bg-\(getpid())"
            try FileManager.default.createDirectory(atPath: templates, withIntermediateDirectories: true)
            try "#!/bin/sh\nsh -c 'sleep 0.3; exec xprop -root -spy >/dev/null' &\nexit 0\n"
                .write(toFile: templates + "/background.xstartup", atomically: true, encoding: .utf8)
            try "#!/bin/sh\necho nothing to see\nexit 0\n".write(toFile: templates + "/nothing.xstartup", atomically: true, encoding: .utf8)
            let daemon = try DaemonUnderTest(config: "[sessions]\ntemplates = [\"\(templates)\"]\n")
            defer { daemon.shutDown(); TestUsers.reap(bea); try? FileManager.default.removeItem(atPath: templates) }

            let session = try daemon.start(bea.name, extra: ["--desktop", "background"])
            let client = try #require(TestUsers.processes(of: bea).first { Self.commandLine(of: $0) == "xprop -root -spy" })
            usleep(500_000)
            let listed = try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions
            #expect(listed.map(\.id) == [session.id] && listed.first?.state == .ready, "\(listed)\n\(daemon.logText)")
            let logs = try daemon.deskctl(["logs", session.id, "--json"]).decode(SessionLogs.self)
            let desktopLog = logs.processes.first { $0.role == .desktop }?.lines.joined(separator: "\n") ?? ""
            #expect(desktopLog.contains("deskd: the desktop's script exited and left"), "\(desktopLog)")

            kill(client, SIGTERM)
            #expect(eventually(15) { (try? daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty) == true },
                    "the session outlived its last client: \(daemon.logText)")
            #expect(eventually(10) { TestUsers.processes(of: bea).isEmpty }, "left running: \(TestUsers.processes(of: bea))")

            // A script that exits 0 and leaves nothing is still a failed start, with its log.
            let nothing = try daemon.deskctl(["start", "--user", bea.name, "--desktop", "nothing"])
            #expect(nothing.status == 1)
            #expect(nothing.stderr.contains("exited with status 0 before it opened its display"), "\(nothing.stderr)")
            #expect(nothing.stderr.contains("nothing to see"), "\(nothing.stderr)")
        }

        /// GNOME 50 in Xvnc: gnome-session opens the display (so the start is ready), then
        /// aborts, leaving processes that hold it. A script that ends that way leaves a black
        /// screen, not a desktop: its session ends, and its log says how the script ended.
        @Test func aDesktopWhoseScriptAbortsAfterItsFirstClientIsNotKeptByWhatItLeft() throws {
            let cay = try TestUsers.ensure("deskt-cay")
            let templates = "/tmp/deskt-templates-abort-\(getpid())"
            try FileManager.default.createDirectory(atPath: templates, withIntermediateDirectories: true)
            try "#!/bin/sh\nxprop -root -spy >/dev/null &\nsleep 1\necho about to abort\nkill -ABRT $$\n"
                .write(toFile: templates + "/aborts.xstartup", atomically: true, encoding: .utf8)
            let daemon = try DaemonUnderTest(config: "[sessions]\ntemplates = [\"\(templates)\"]\n")
            defer { daemon.shutDown(); TestUsers.reap(cay); try? FileManager.default.removeItem(atPath: templates) }

            let session = try daemon.start(cay.name, extra: ["--desktop", "aborts"])
            #expect(eventually(15) { (try? daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty) == true },
                    "the processes an aborted script left kept its session: \(daemon.logText)")
            #expect(eventually(10) { TestUsers.processes(of: cay).isEmpty }, "left running: \(TestUsers.processes(of: cay))")
            let logs = try daemon.deskctl(["logs", session.id, "--json"]).decode(SessionLogs.self)
            let desktopLog = logs.processes.first { $0.role == .desktop }?.lines.joined(separator: "\n") ?? ""
            #expect(desktopLog.contains("killed by signal 6"), "\(desktopLog)")
            #expect(!desktopLog.contains("the session stays"), "\(desktopLog)")
        }

        static func commandLine(of pid: pid_t) -> String {
            let bytes = ProcFS.read("/proc/\(pid)/cmdline", limit: 4096) ?? []
            return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
        }

        /// The display number of the user's Xtigervnc, from its command line.
        static func xvncDisplay(of account: UserAccount) -> Int? {
            for pid in TestUsers.processes(of: account) {
                let words = commandLine(of: pid).split(separator: " ")
                if words.first?.hasSuffix("Xtigervnc") == true, let display = words.dropFirst().first, display.hasPrefix(":") {
                    return Int(display.dropFirst())
                }
            }
            return nil
        }
    }
}

/// A command run on a thread of its own, so a test can look at the world while it waits.
final class StartInBackground: @unchecked Sendable {
    private let lock = NSLock()
    private var outcome: CommandResult?
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> CommandResult) {
        Thread.detachNewThread { [self] in
            let result = try? body()
            lock.withLock { outcome = result }
            done.signal()
        }
    }

    /// What it returned, if it has.
    var result: CommandResult? { lock.withLock { outcome } }

    func wait(seconds: Double) -> CommandResult? {
        _ = done.wait(timeout: .now() + seconds)
        return result
    }
}
