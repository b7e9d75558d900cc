import DeskClient
import DeskCore
import DeskLinux
import VNCViewer
import Foundation
import Glibc
import Testing

/// Who may do what, and what bad input gets: one sentence, a non-zero exit, a daemon still serving.
extension EndToEnd {
@Suite struct AccessAndInputTests {
    @Test func usersSeeAndKillOnlyTheirOwnSessions() throws {
        let frank = try TestUsers.ensure("deskt-frank")
        let grace = try TestUsers.ensure("deskt-grace")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(frank); TestUsers.reap(grace) }

        // An ordinary user starts their own desktop without --user.
        let franks = try daemon.start(frank.name, as: frank.name)
        #expect(franks.user == frank.name && franks.password != nil)
        let graces = try daemon.start(grace.name, as: grace.name)

        // Each sees only their own, even when asking for --all.
        let seenByFrank = try daemon.deskctl(["list", "--all", "--json"], as: frank.name).decode(SessionList.self).sessions
        #expect(seenByFrank.map(\.user) == [frank.name])

        // Grace may not kill, show or start for Frank; his desktop survives.
        let kill = try daemon.deskctl(["kill", franks.display.description], as: grace.name)
        #expect(kill.status != 0)
        #expect(kill.stderr.contains("belongs to another user"))
        #expect(try daemon.deskctl(["kill", "--user", frank.name], as: grace.name).status != 0)
        #expect(try daemon.deskctl(["show", franks.display.description], as: grace.name).status != 0)
        let startForOther = try daemon.deskctl(["start", "--user", frank.name], as: grace.name)
        #expect(startForOther.status != 0 && startForOther.stderr.contains("only an admin"))
        // Grace's --all kills only her own.
        let killedByGrace = try daemon.deskctl(["kill", "--all", "--json"], as: grace.name).decode([Session].self)
        #expect(killedByGrace.map(\.display) == [graces.display])
        #expect(ProcFS.isAlive(franks.pid))
        let password = try #require(franks.password)
        #expect(try VNCConnection(franks.endpoint, password: password).info.width > 0)

        // Root sees everything; Frank kills his own.
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.map(\.user) == [frank.name])
        #expect(try daemon.deskctl(["kill", franks.display.description], as: frank.name).status == 0)
        #expect(TestUsers.processes(of: frank).isEmpty)
    }

    @Test func membersOfTheAdminGroupActOnEveryone() throws {
        let admin = try TestUsers.ensure("deskt-admin", groups: ["deskt-admins"])
        let heidi = try TestUsers.ensure("deskt-heidi")
        let daemon = try DaemonUnderTest(extraArguments: ["--admin-group", "deskt-admins"])
        defer { daemon.shutDown(); TestUsers.reap(heidi); TestUsers.reap(admin) }

        let session = try daemon.start(heidi.name, as: admin.name)
        #expect(session.user == heidi.name && session.password != nil)
        #expect(try daemon.deskctl(["list", "--all", "--json"], as: admin.name).decode(SessionList.self).sessions.map(\.user) == [heidi.name])
        #expect(try daemon.deskctl(["kill", "--user", heidi.name], as: admin.name).status == 0)
        #expect(TestUsers.processes(of: heidi).isEmpty)
    }

    @Test func badInputGetsOneClearSentenceAndTheDaemonGoesOn() throws {
        let ivan = try TestUsers.ensure("deskt-ivan")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(ivan) }
        let held = try daemon.start(ivan.name)

        let refusals: [([String], String)] = [
            (["start", "--user", "deskt-nobody-here"], "no user named"),
            (["start", "--user", "root"], "root"),
            (["start"], "root"),
            (["start", "--user", "daemon"], "system account"),
            (["start", "--user", ivan.name, "--geometry", "big"], "geometry"),
            (["start", "--user", ivan.name, "--geometry", "99999x10"], "geometry"),
            (["start", "--user", ivan.name, "--depth", "7"], "depth"),
            (["start", "--user", ivan.name, "--desktop", "../../etc/passwd"], "desktop name"),
            (["start", "--user", ivan.name, "--desktop", "nosuchdesktop"], "no desktop named"),
            (["start", "--user", ivan.name, "--display", ":0"], "out of range"),
            (["start", "--user", ivan.name, "--display", ":100"], "out of range"),
            (["start", "--user", ivan.name, "--display", held.display.description], "in use"),
            (["kill", ":98"], "no deskd session"),
            (["kill"], "say which sessions"),
            (["show", "three"], "not a display"),
        ]
        for (arguments, phrase) in refusals {
            let result = try daemon.deskctl(arguments)
            #expect(result.status != 0, "\(arguments) should fail")
            #expect(result.stderr.localizedCaseInsensitiveContains(phrase), "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count <= 2, "\(arguments): one sentence, got \(result.stderr)")
        }

        // Malformed and oversized requests on the wire get an error reply, not a hang or a crash.
        let wire: [[UInt8]] = [
            Array("not json\n".utf8),
            Array("{\"version\":9,\"command\":\"list\"}\n".utf8),
            Array("{\"version\":1,\"command\":\"explode\"}\n".utf8),
            [0xFF, 0xFE, 0x00, 0x0A],
            Array(repeating: UInt8(ascii: "["), count: 5000) + [0x0A],
            Array(repeating: UInt8(ascii: "a"), count: ControlProtocol.maxRequestBytes + 10),
        ]
        for bytes in wire {
            let reply = try JSONDecoder.desk.decode(Response.self, from: Data(daemon.client.exchange(bytes)))
            #expect(!reply.ok && reply.error != nil)
        }

        // Nothing was lost and the daemon still serves.
        #expect(daemon.isRunning)
        #expect(try daemon.client.send(Request(command: .ping)).ok)
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.map(\.pid) == [held.pid])
        #expect(ProcFS.isAlive(held.pid))
    }

    @Test func deskctlSaysWhenTheDaemonIsNotThere() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestEnvironment.deskctl)
        process.arguments = ["list", "--socket", "/tmp/deskd-test-no-such-socket"]
        let err = Pipe()
        process.standardError = err
        try process.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 3)
        #expect(text.contains("cannot reach deskd"))
    }
}
}
