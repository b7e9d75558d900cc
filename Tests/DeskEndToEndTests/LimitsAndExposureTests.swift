import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// The admin's limits from deskd.toml, each refusal naming its key; and how far Xvnc is exposed.
extension EndToEnd {
@Suite struct LimitsAndExposureTests {
    @Test func everyConfiguredLimitRefusesWithItsName() throws {
        let nina = try TestUsers.ensure("deskt-nina")
        let oscar = try TestUsers.ensure("deskt-oscar")
        let paula = try TestUsers.ensure("deskt-paula", groups: ["deskt-vnc"])
        let quinn = try TestUsers.ensure("deskt-quinn")
        let daemon = try DaemonUnderTest(config: """
            [limits]
            max_sessions_per_user = 1
            max_sessions = 2
            allowed_users = ["deskt-nina", "deskt-oscar"]
            allowed_groups = ["deskt-vnc"]
            allowed_desktops = ["xterm"]
            max_geometry = "1280x800"
            displays = "41-45"
            """)
        defer { daemon.shutDown(); for user in [nina, oscar, paula, quinn] { TestUsers.reap(user) } }

        func refusal(_ arguments: [String], as user: String? = nil) throws -> String {
            let result = try daemon.deskctl(arguments, as: user)
            #expect(result.status == 1, "\(arguments) should be refused: \(result.stdout)")
            return result.stderr
        }

        // No size asked for: the default (1920x1080) is fitted into the bounds, not refused.
        let first = try daemon.start(nina.name)
        #expect((41...45).contains(first.display.number) && first.geometry == Geometry(width: 1280, height: 800))
        #expect(try refusal(["start", "--user", nina.name]).contains("limits.max_sessions_per_user (1)"))
        #expect(try refusal(["start", "--user", quinn.name]).contains("limits.allowed_users and limits.allowed_groups admit only"))
        #expect(try refusal(["start", "--user", oscar.name, "--geometry", "1920x1080"]).contains("limits.max_geometry 1280x800"))
        #expect(try refusal(["start", "--user", oscar.name, "--desktop", "gnome"]).contains("limits.allowed_desktops"))
        #expect(try refusal(["start", "--user", oscar.name, "--display", ":40"]).contains("use :41 to :45"))
        // Paula gets in through the group; then the host is full.
        _ = try daemon.start(paula.name, extra: ["--geometry", "1024x768"])
        #expect(try refusal(["start", "--user", oscar.name, "--geometry", "1024x768"]).contains("limits.max_sessions (2)"))
        // Nothing was lost along the way.
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.map(\.user) == [nina.name, paula.name])
    }

    @Test func startsAreRateLimitedPerUserButNotForRoot() throws {
        let rita = try TestUsers.ensure("deskt-rita")
        let daemon = try DaemonUnderTest(config: "[limits]\nstarts_per_minute = 2\n")
        defer { daemon.shutDown(); TestUsers.reap(rita) }
        // Every attempt counts, refused or not: two refused starts use up Rita's minute.
        for _ in 0..<2 {
            #expect(try daemon.deskctl(["start", "--desktop", "no-such"], as: rita.name).stderr.contains("there is no desktop named"))
        }
        let limited = try daemon.deskctl(["start"], as: rita.name)
        #expect(limited.status == 1 && limited.stderr.contains("too many starts: limits.starts_per_minute allows 2 a minute per user"))
        // Root starts hers all the same.
        _ = try daemon.start(rita.name)
    }

    @Test func listeningBeyondLoopbackNeedsTLSAndNeverNone() throws {
        let sam = try TestUsers.ensure("deskt-sam")
        let tls = URL(fileURLWithPath: "/tmp").appendingPathComponent("deskt-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: tls, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: tls) }
        let certificate = tls.appendingPathComponent("cert.pem").path, key = tls.appendingPathComponent("key.pem").path
        #expect(try TestUsers.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=deskd-test",
                                                       "-keyout", key, "-out", certificate]) == 0)
        chmod(key, 0o600)
        let keyBefore = try Data(contentsOf: URL(fileURLWithPath: key))

        // None is refused outright, before deskd starts.
        let bad = tls.appendingPathComponent("none.toml")
        try "[network]\nlisten = \"0.0.0.0\"\nsecurity_types = [\"None\"]\n".write(to: bad, atomically: true, encoding: .utf8)
        let check = try DaemonUnderTest.runDeskd(["--check-config", "--config", bad.path])
        #expect(check.status != 0)
        #expect(check.stderr.contains("none.toml:3: network.security_types may not contain None"))

        let daemon = try DaemonUnderTest(config: """
            [network]
            listen = "0.0.0.0"
            security_types = ["X509Vnc"]
            tls_certificate = "\(certificate)"
            tls_key = "\(key)"
            """)
        defer { daemon.shutDown(); TestUsers.reap(sam) }
        let session = try daemon.start(sam.name)

        // Xvnc listens on every interface, offers only VeNCrypt (TLS with the certificate), never None.
        let netTCP = ProcFS.readText("/proc/net/tcp") ?? ""
        let rfbPort = try #require(session.rfbPort)
        #expect(session.rfbSocket == nil)
        let port = String(rfbPort, radix: 16, uppercase: true)
        #expect(netTCP.contains("00000000:\(port) 00000000:0000 0A"))
        #expect(!netTCP.contains("0100007F:\(port) 00000000:0000 0A"))
        guard case .answered(_, let types) = RFBHandshake.attempt(port: rfbPort, timeoutMilliseconds: 2000) else {
            Issue.record("no RFB handshake"); return
        }
        #expect(types == [RFBClient.veNCrypt])
        let commandLine = String(decoding: ProcFS.read("/proc/\(session.pid)/cmdline") ?? [], as: UTF8.self).split(separator: "\0")
        #expect(!commandLine.contains("-localhost") && commandLine.contains("X509Vnc"))
        // Xvnc, running as Sam, reads its own copy of the key; the admin's stays root-only and unchanged.
        let copy = daemon.runtimeDirectory + "/displays/\(session.display.number)/tls-key.pem"
        var info = stat()
        #expect(stat(copy, &info) == 0 && info.st_uid == sam.uid && info.st_mode & 0o777 == 0o600)
        #expect(stat(key, &info) == 0 && info.st_uid == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: key)) == keyBefore)
        #expect(try daemon.deskctl(["probe", session.display.description]).status == 0)
    }
}
}
