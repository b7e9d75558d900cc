import DeskClient
import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// X servers deskd did not start, and locks left by dead ones.
extension EndToEnd {
@Suite struct ForeignDisplayTests {
    @Test func aStartSkipsAForeignServerAndReclaimsAStaleLock() throws {
        let mallory = try TestUsers.ensure("deskt-mallory")
        let nina = try TestUsers.ensure("deskt-nina")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(nina); TestUsers.reap(mallory) }

        // A hand-started Xtigervnc (as a user, outside deskd) on the lowest free display...
        let allocator = DisplayAllocator()
        let snapshot = DisplaySnapshot.take(displays: 1...99)
        let foreign = try allocator.choose(requested: nil) { snapshot.occupancy(of: $0) }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        server.arguments = ["--reuid", String(mallory.uid), "--regid", String(mallory.gid), "--clear-groups", "--",
                            "/usr/bin/Xtigervnc", foreign.description, "-rfbport", String(foreign.rfbPort()), "-localhost", "-SecurityTypes", "None"]
        server.standardError = FileHandle.nullDevice
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        defer {
            // Foundation's Process leaves SIGTERM blocked in its children, so end it the hard way
            // and remove the lock and socket it cannot remove itself.
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            unlink(foreign.lockPath)
            unlink(foreign.socketPath)
        }
        #expect(eventually { if case .answered = RFBHandshake.attempt(port: foreign.rfbPort(), timeoutMilliseconds: 200) { true } else { false } })

        // ...and on the next one, a lock naming a process that is gone.
        let stale = try allocator.choose(requested: nil, skipping: [foreign]) { DisplaySnapshot.take(displays: 1...99).occupancy(of: $0) }
        let dead = Process()
        dead.executableURL = URL(fileURLWithPath: "/bin/true")
        try dead.run()
        dead.waitUntilExit()
        let lock = String(format: "%10d\n", dead.processIdentifier)
        #expect(FileManager.default.createFile(atPath: stale.lockPath, contents: Data(lock.utf8)))
        #expect(XLockFile.read(stale) == .stale(pid: dead.processIdentifier))

        let session = try daemon.start(nina.name)
        #expect(session.display == stale, "expected the reclaimed \(stale), got \(session.display)")
        #expect(server.isRunning, "the foreign server must survive")
        #expect(XLockFile.read(stale) == .live(pid: session.pid))

        // Admins see the foreign display, and deskd will not start on it.
        let table = try daemon.deskctl(["list", "--all"])
        #expect(table.stdout.contains("Foreign displays") && table.stdout.contains(foreign.description))
        // ...and so do scripts: list --json carries them beside the sessions, and validates.
        let listed = try daemon.deskctl(["list", "--all", "--json"])
        #expect(try listed.decode(SessionList.self).foreign.map(\.display).contains(foreign))
        if JSONSchemaCheck.isAvailable { try JSONSchemaCheck.expectValid(listed, "list") }
        let refused = try daemon.deskctl(["start", "--user", nina.name, "--display", foreign.description])
        #expect(refused.status != 0 && refused.stderr.contains("in use"))
        #expect(try daemon.deskctl(["kill", "--all"]).status == 0)
        #expect(server.isRunning)
    }

    @Test func theDaemonsOwnIdleLimitEndsUnwatchedSessions() throws {
        let olga = try TestUsers.ensure("deskt-olga")
        let daemon = try DaemonUnderTest(extraArguments: ["--idle-limit", "2s"])
        defer { daemon.shutDown(); TestUsers.reap(olga) }
        let session = try daemon.start(olga.name)
        #expect(eventually(10) { (try? daemon.sessions().isEmpty) == true })
        #expect(eventually { TestUsers.processes(of: olga).isEmpty })
        #expect(daemon.logText.contains("reaping idle session"))
        #expect(eventually { session.display.isFree })
    }
}
}
