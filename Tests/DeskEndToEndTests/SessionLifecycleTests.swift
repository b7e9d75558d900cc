import CTestShims
import DeskClient
import DeskCore
import DeskLinux
import VNCViewer
import Foundation
import Glibc
import Testing

/// Real deskd, real deskctl, real Xtigervnc, real users, real RFB. Serialized: the host has one
/// set of X displays, and two cores.
extension EndToEnd {
@Suite struct SessionLifecycleTests {
    @Test func startAuthenticateListKill() throws {
        let alice = try TestUsers.ensure("deskt-alice")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(alice) }

        let session = try daemon.start(alice.name, extra: ["--geometry", "1280x800"])
        let password = try #require(session.password)
        #expect(session.user == alice.name && session.uid == alice.uid)
        #expect(session.state == .ready)
        #expect(session.rfbPort == nil)
        #expect(session.rfbSocket == daemon.runtimeDirectory + "/displays/\(session.display.number)/rfb.sock")
        #expect(password.count == 8)

        // Xvnc runs as alice, in a session of its own, on no TCP port at all: its RFB socket is
        // alice's (0600, in her 0700 directory), and its X server demands her cookie.
        #expect(ProcFS.uid(of: session.pid) == alice.uid)
        #expect(ProcFS.process(session.pid)?.session == session.pid)
        let xvncSockets = ProcFS.socketInodes(of: session.pid)
        #expect(!ProcFS.tcpSockets().contains { $0.state == ProcFS.TCPSocket.listen && xvncSockets.contains($0.inode) })
        var socketInfo = stat()
        #expect(stat(try #require(session.rfbSocket), &socketInfo) == 0)
        #expect(socketInfo.st_mode & S_IFMT == S_IFSOCK && socketInfo.st_uid == alice.uid && socketInfo.st_mode & 0o777 == 0o600)
        let commandLine = String(decoding: ProcFS.read("/proc/\(session.pid)/cmdline") ?? [], as: UTF8.self).split(separator: "\0")
        #expect(commandLine.contains("-auth") && commandLine.contains("-rfbunixpath"))

        // The password file is the user's, 0600, and decodes to the printed password.
        let passwordFile = daemon.runtimeDirectory + "/displays/\(session.display.number)/passwd"
        var info = stat()
        #expect(stat(passwordFile, &info) == 0)
        #expect(info.st_uid == alice.uid && info.st_mode & 0o777 == 0o600)
        #expect(ProcFS.read(passwordFile) == VNCPasswordFile.encode(password: password))

        // A real VNC client gets in with the password, and the framebuffer has the asked-for size.
        let viewer = try VNCConnection(session.endpoint, password: password)
        #expect(viewer.info.width == 1280 && viewer.info.height == 800)
        #expect(viewer.info.desktopName.contains(alice.name))
        #expect(viewer.refresh() != nil)
        viewer.close()
        // ...and a wrong one is refused.
        #expect(throws: VNCConnection.Failure.refused) { try VNCConnection(session.endpoint, password: "wrong123") }

        // list shows it, without the password.
        let listed = try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions
        #expect(listed.map(\.display) == [session.display])
        #expect(listed.first?.password == nil)
        #expect(listed.first?.pid == session.pid)
        let table = try daemon.deskctl(["list", "--all"])
        #expect(table.stdout.contains("DISPLAY") && table.stdout.contains(alice.name))

        let shown = try daemon.deskctl(["show", session.display.description, "--json"]).decode(Session.self)
        #expect(shown.id == session.id)

        // kill leaves nothing: not Xvnc, not the desktop, not the display.
        let kill = try daemon.deskctl(["kill", session.display.description])
        #expect(kill.status == 0, "\(kill.stderr)")
        #expect(TestUsers.processes(of: alice).isEmpty)
        #expect(eventually { session.display.isFree })
        #expect(access(session.display.lockPath, F_OK) != 0)
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty)

        // The display is free for the next start.
        let next = try daemon.start(alice.name, extra: ["--display", session.display.description])
        #expect(next.display == session.display)
    }

    @Test func killEndsEverythingTheSessionSpawnedEvenADoubleForkedDaemon() throws {
        let bob = try TestUsers.ensure("deskt-bob")
        let templates = URL(fileURLWithPath: "/tmp/deskd-test-templates-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
        // The desktop double-forks a child into a session of its own, then waits in the foreground.
        try """
        #!/bin/sh
        \(TestDesktop.holdsDisplay)
        ( setsid sh -c 'exec sleep 3001' & )
        sleep 3002 &
        exec sleep 3003
        """.write(to: templates.appendingPathComponent("forker.xstartup"), atomically: true, encoding: .utf8)
        let daemon = try DaemonUnderTest(extraArguments: ["--templates", templates.path])
        defer { daemon.shutDown(); TestUsers.reap(bob); try? FileManager.default.removeItem(at: templates) }

        let session = try daemon.start(bob.name, extra: ["--desktop", "forker"])
        #expect(eventually { Self.commandLines(of: bob).contains("sleep 3001") })
        let escaped = try #require(TestUsers.processes(of: bob).first { Self.commandLine($0) == "sleep 3001" })
        #expect(ProcFS.process(escaped)?.session != ProcFS.process(session.pid)?.session, "the child should sit in its own session")

        let kill = try daemon.deskctl(["kill", "--user", bob.name])
        #expect(kill.status == 0, "\(kill.stderr)")
        #expect(TestUsers.processes(of: bob).isEmpty, "left behind: \(Self.commandLines(of: bob))")
        #expect(eventually { session.display.isFree })
    }

    @Test func sessionsOutliveADaemonKilledWithSIGKILLAndAreAdoptedByTheNext() throws {
        let carol = try TestUsers.ensure("deskt-carol")
        let first = try DaemonUnderTest()
        defer { first.shutDown(); TestUsers.reap(carol) }
        let session = try first.start(carol.name)
        let password = try #require(session.password)

        first.sigkill()
        #expect(ProcFS.isAlive(session.pid))
        #expect(try VNCConnection(session.endpoint, password: password).info.width == 1920)

        let second = try DaemonUnderTest(reusing: first)
        let adopted = try second.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions
        #expect(adopted.count == 1)
        #expect(adopted.first?.pid == session.pid && adopted.first?.state == .ready && adopted.first?.id == session.id)
        #expect(second.logText.contains("session adopted"))

        // A graceful stop (SIGTERM) leaves it too.
        second.process?.terminate()
        second.process?.waitUntilExit()
        #expect(ProcFS.isAlive(session.pid))

        let third = try DaemonUnderTest(reusing: first)
        defer { third.shutDown() }
        #expect(try third.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.map(\.pid) == [session.pid])
        #expect(try third.deskctl(["kill", "--all"]).status == 0)
        #expect(TestUsers.processes(of: carol).isEmpty)
        #expect(eventually { session.display.isFree })
    }

    @Test func aRestartedDaemonForgetsSessionsThatDiedWhileItWasAway() throws {
        let dave = try TestUsers.ensure("deskt-dave")
        let first = try DaemonUnderTest()
        defer { first.shutDown(); TestUsers.reap(dave) }
        let session = try first.start(dave.name)
        first.sigkill()
        // While no deskd runs, the whole session dies hard: Xvnc's lock stays behind, naming a dead pid.
        TestUsers.reap(dave)
        #expect(eventually { !ProcFS.isAlive(session.pid) })
        #expect(access(session.display.lockPath, F_OK) == 0)

        let second = try DaemonUnderTest(reusing: first)
        defer { second.shutDown() }
        #expect(try second.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty)
        #expect(access(session.display.lockPath, F_OK) != 0, "the stale lock should be reclaimed")
        #expect(!FileManager.default.fileExists(atPath: second.runtimeDirectory + "/displays/\(session.display.number)"))
        // The display is reusable at once.
        let again = try second.start(dave.name, extra: ["--display", session.display.description])
        #expect(again.display == session.display)
    }

    @Test func crashOfXvncIsNoticedAndTheDisplayFreed() throws {
        let erin = try TestUsers.ensure("deskt-erin")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(erin) }
        let session = try daemon.start(erin.name)
        kill(session.pid, SIGKILL)
        #expect(eventually(5) { (try? daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty) == true })
        #expect(eventually { TestUsers.processes(of: erin).isEmpty })
        #expect(eventually { session.display.isFree })
        // The display is reused by the next start.
        #expect(try daemon.start(erin.name).display == session.display)
    }

    @Test func theDesktopExitingEndsTheSessionUnlessConfiguredOtherwise() throws {
        let fay = try TestUsers.ensure("deskt-fay")
        let ending = try DaemonUnderTest()
        defer { ending.shutDown(); TestUsers.reap(fay) }
        let first = try ending.start(fay.name)
        kill(try #require(ending.desktopPid(of: first)), SIGKILL)
        #expect(eventually { (try? ending.sessions().isEmpty) == true })
        #expect(eventually { !ProcFS.isAlive(first.pid) })
        ending.shutDown()

        let keeping = try DaemonUnderTest(extraArguments: ["--keep-session-on-desktop-exit"])
        defer { keeping.shutDown() }
        let second = try keeping.start(fay.name)
        kill(try #require(keeping.desktopPid(of: second)), SIGKILL)
        usleep(500_000)
        #expect(ProcFS.isAlive(second.pid))
        #expect(try keeping.sessions().map(\.pid) == [second.pid])
    }

    /// deskd-session reaps the desktop as soon as it exits; a session that outlives its desktop
    /// (desktop_exit_ends_session off) then holds a number that is anyone's. Here the next
    /// process with that number is root's, unrelated to the session: when deskd-session is told
    /// to end the session (SIGTERM, as at shutdown), it must signal its own processes, never
    /// whatever holds a reaped one's pid. Issue 26, item 6.
    @Test func deskdSessionNeverSignalsAProcessThatTookAReapedDesktopsPid() throws {
        let gus = try TestUsers.ensure("deskt-gus")
        let templates = URL(fileURLWithPath: "/tmp/deskd-test-templates-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
        // One process, alone in its process group and session, so its number is free once reaped.
        try "#!/bin/sh\nexec sleep 3004\n".write(to: templates.appendingPathComponent("lone.xstartup"), atomically: true, encoding: .utf8)
        let daemon = try DaemonUnderTest(extraArguments: ["--templates", templates.path, "--keep-session-on-desktop-exit"])
        defer { daemon.shutDown(); TestUsers.reap(gus); try? FileManager.default.removeItem(at: templates) }

        let session = try daemon.start(gus.name, extra: ["--desktop", "lone"])
        let desktop = try #require(daemon.desktopPid(of: session))
        let helper = try #require(Self.parent(of: session.pid))
        #expect(ProcFS.executable(of: helper)?.hasSuffix("/deskd-session") == true, "Xvnc's parent \(helper) is not deskd-session")
        #expect(Self.parent(of: desktop) == helper)

        kill(desktop, SIGKILL)
        // Reaped, not a zombie: the number is free for the next process.
        #expect(eventually { ProcFS.process(desktop) == nil }, "deskd-session did not reap the desktop \(desktop)")
        #expect(try daemon.sessions().map(\.pid) == [session.pid], "the session should outlive its desktop")

        let words: [String] = ["/bin/sleep", "3005"]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let impostor = desk_test_spawn_with_pid(desktop, argv)
        let spawnError = errno
        try #require(impostor == desktop, "could not start a process as pid \(desktop): \(String(cString: strerror(spawnError)))")
        let impostorStart = try #require(ProcFS.process(impostor)?.startTicks)
        defer {
            if ProcFS.process(impostor)?.startTicks == impostorStart { kill(impostor, SIGKILL) }
            waitpid(impostor, nil, 0)
        }

        kill(helper, SIGTERM)
        #expect(eventually(15) { (try? daemon.sessions().isEmpty) == true }, "the session did not end: \(daemon.logText)")
        #expect(eventually { !ProcFS.isAlive(helper) }, "deskd-session did not end")

        var status: Int32 = 0
        let ended = waitpid(impostor, &status, WNOHANG) == impostor
        #expect(!ended && ProcFS.process(impostor)?.startTicks == impostorStart,
                "root's process \(impostor), holding the reaped desktop's pid, was \(ended ? (status & 0x7F != 0 ? "killed by signal \(status & 0x7F)" : "ended with status \((status >> 8) & 0xFF)") : "gone")")
    }

    /// A process's parent, from /proc/PID/status.
    static func parent(of pid: pid_t) -> pid_t? {
        guard let status = ProcFS.readText("/proc/\(pid)/status") else { return nil }
        return status.split(separator: "\n").first { $0.hasPrefix("PPid:") }.flatMap { pid_t($0.dropFirst(5).trimming()) }
    }

    static func commandLine(_ pid: pid_t) -> String {
        (ProcFS.read("/proc/\(pid)/cmdline") ?? []).split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
    }

    static func commandLines(of account: UserAccount) -> [String] {
        TestUsers.processes(of: account).map(commandLine)
    }
}
}
