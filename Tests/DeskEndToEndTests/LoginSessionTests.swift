import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// Every desktop is a PAM login (service "deskd", opened by deskd-session): the account stack
/// can refuse it, limits.conf applies inside it, and it has a session keyring of its own.
/// Needs /etc/pam.d/deskd, which scripts/install-deps puts there (as an install would).
extension EndToEnd {
@Suite struct LoginSessionTests {
    @Test func anExpiredAccountIsRefusedWithASentenceAndNothingStarts() throws {
        let ivy = try TestUsers.ensure("deskt-ivy")
        let daemon = try DaemonUnderTest()
        defer {
            daemon.shutDown()
            _ = try? TestUsers.run("/usr/bin/chage", ["-E", "-1", ivy.name])
            TestUsers.reap(ivy)
        }
        try TestUsers.run("/usr/bin/chage", ["-E", "0", ivy.name])
        let refused = try daemon.deskctl(["start", "--user", ivy.name])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("\(ivy.name) may not log in") && refused.stderr.contains("expired"), "\(refused.stderr)")
        #expect(eventually { TestUsers.processes(of: ivy).isEmpty })
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode([Session].self).isEmpty)

        // The same account, no longer expired, gets its desktop.
        try TestUsers.run("/usr/bin/chage", ["-E", "-1", ivy.name])
        let session = try daemon.start(ivy.name)
        #expect(ProcFS.isAlive(session.pid))
    }

    @Test func limitsConfAppliesInsideTheDesktop() throws {
        let lou = try TestUsers.ensure("deskt-lou")
        let limits = "/etc/security/limits.d/deskt-lou-\(getpid()).conf"
        try "\(lou.name) hard nproc 321\n\(lou.name) soft nproc 321\n".write(toFile: limits, atomically: true, encoding: .utf8)
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); unlink(limits); TestUsers.reap(lou) }
        let session = try daemon.start(lou.name)
        let desktop = try #require(daemon.desktopPid(of: session))
        for pid in [session.pid, desktop] {
            let line = (ProcFS.readText("/proc/\(pid)/limits") ?? "").split(separator: "\n").first { $0.hasPrefix("Max processes") }
            #expect(line?.split(separator: " ").dropFirst(2).prefix(2).map(String.init) == ["321", "321"], "\(line ?? "no limits")")
        }
    }

    /// Each desktop has a session keyring of its own: a key Una adds to hers is out of Vic's
    /// reach from inside his desktop (sharing deskd's session keyring, he could read it).
    @Test func eachDesktopHasItsOwnSessionKeyring() throws {
        let una = try TestUsers.ensure("deskt-una")
        let vic = try TestUsers.ensure("deskt-vic")
        let templates = "/tmp/deskt-templates-\(getpid())"
        let drop = "/tmp/deskt-keys-\(getpid())"
        try FileManager.default.createDirectory(atPath: templates, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: drop, withIntermediateDirectories: true)
        chmod(drop, 0o1777)
        // Add a key to the session keyring, publish its id, then try to read every other
        // user's published key from inside this session.
        try """
        #!/bin/sh
        id=$(keyctl add user deskt-secret "secret-of-$USER" @s)
        keyctl show @s > "\(drop)/$USER.keyring" 2>&1
        echo "$id" > "\(drop)/$USER.id"
        while :; do
            for other in "\(drop)"/*.id; do
                [ "$other" = "\(drop)/$USER.id" ] && continue
                keyctl print "$(cat "$other")" > "\(drop)/$USER.read" 2>&1
            done
            sleep 0.2
        done
        """.write(toFile: templates + "/keys.xstartup", atomically: true, encoding: .utf8)
        let daemon = try DaemonUnderTest(config: "[sessions]\ntemplates = [\"\(templates)\"]\n")
        defer {
            daemon.shutDown()
            TestUsers.reap(una); TestUsers.reap(vic)
            try? FileManager.default.removeItem(atPath: templates)
            try? FileManager.default.removeItem(atPath: drop)
        }
        _ = try daemon.start(una.name, extra: ["--desktop", "keys"])
        #expect(eventually(10) { FileManager.default.fileExists(atPath: "\(drop)/\(una.name).id") })
        _ = try daemon.start(vic.name, extra: ["--desktop", "keys"])
        #expect(eventually(10) { FileManager.default.fileExists(atPath: "\(drop)/\(vic.name).read") })

        let unasRing = (try? String(contentsOfFile: "\(drop)/\(una.name).keyring", encoding: .utf8)) ?? ""
        let vicsRing = (try? String(contentsOfFile: "\(drop)/\(vic.name).keyring", encoding: .utf8)) ?? ""
        let ringID = { (text: String) in text.split(separator: "\n").dropFirst().first?.split(separator: " ").first.map(String.init) }
        #expect(ringID(unasRing) != nil && ringID(unasRing) != ringID(vicsRing), "\(unasRing)\n\(vicsRing)")
        let attempt = (try? String(contentsOfFile: "\(drop)/\(vic.name).read", encoding: .utf8)) ?? ""
        #expect(!attempt.contains("secret-of-\(una.name)"), "\(attempt)")
        #expect(!attempt.isEmpty)
    }
}
}
