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
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty)

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

    /// A fork bomb in one desktop stops at its owner's nproc limit (limits.d, applied by
    /// pam_limits to the login): another user's start still succeeds, deskd still answers, and
    /// kill ends every process of the bomb (the session's cgroup.kill, which no fork outruns).
    @Test func aForkBombStopsAtItsOwnersLimitAndIsKilledWhole() throws {
        let bea = try TestUsers.ensure("deskt-bea")
        let cal = try TestUsers.ensure("deskt-cal")
        let limits = "/etc/security/limits.d/deskt-bea-\(getpid()).conf"
        try "\(bea.name) hard nproc 120\n\(bea.name) soft nproc 120\n".write(toFile: limits, atomically: true, encoding: .utf8)
        let templates = "/tmp/deskt-templates-bomb-\(getpid())"
        try FileManager.default.createDirectory(atPath: templates, withIntermediateDirectories: true)
        // Every process forks another every 0.2 s, forever: the population doubles until forks fail
        // at the limit, and stays there (a classic `:|:&` bomb can die out before it is seen).
        // The desktop itself becomes a sleep without a fork: a shell whose fork fails exits, and
        // the session would end with it.
        try "#!/bin/sh\n\(TestDesktop.holdsDisplay)\nbomb() { while :; do bomb & sleep 0.2; done; }\nbomb &\nexec sleep 600\n".write(toFile: templates + "/bomb.xstartup", atomically: true, encoding: .utf8)
        let daemon = try DaemonUnderTest(config: "[sessions]\ntemplates = [\"\(templates)\"]\n")
        defer {
            daemon.shutDown()
            unlink(limits)
            TestUsers.reap(bea); TestUsers.reap(cal)
            try? FileManager.default.removeItem(atPath: templates)
        }
        let bomb = try daemon.start(bea.name, extra: ["--desktop", "bomb"])
        // The bomb spreads until forks fail at the limit (the shell says so in the desktop's log),
        // and never holds more than the limit.
        var most = 0
        #expect(eventually(15) {
            most = max(most, TestUsers.processes(of: bea).count)
            return most >= 100 && ((try? daemon.deskctl(["logs", bomb.display.description]).stdout) ?? "").contains("Cannot fork")
        }, "the bomb never reached its limit: at most \(most) processes")
        for _ in 0..<20 {
            most = max(most, TestUsers.processes(of: bea).count)
            usleep(50_000)
        }
        #expect(most <= 120, "\(most) processes, over the limit of 120")

        let other = try daemon.start(cal.name)
        #expect(ProcFS.isAlive(other.pid))
        #expect(try daemon.deskctl(["status"]).status == 0)
        // The bomb's session is still there (a kill of its display must not land on another's).
        #expect(try daemon.deskctl(["show", bomb.display.description, "--json"]).decode(Session.self).id == bomb.id)
        #expect(try daemon.deskctl(["kill", bomb.display.description]).status == 0)
        #expect(eventually(10) { TestUsers.processes(of: bea).isEmpty }, "\(TestUsers.processes(of: bea).count) of the bomb's processes left")
        #expect(ProcFS.isAlive(other.pid), "\((try? daemon.deskctl(["logs", other.id]))?.stdout ?? "")\n\(daemon.logText)")
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
        \(TestDesktop.holdsDisplay)
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
        // The shell makes the file before keyctl writes into it: wait for what keyctl said.
        #expect(eventually(10) { !((try? String(contentsOfFile: "\(drop)/\(vic.name).read", encoding: .utf8)) ?? "").isEmpty })

        let unasRing = (try? String(contentsOfFile: "\(drop)/\(una.name).keyring", encoding: .utf8)) ?? ""
        let vicsRing = (try? String(contentsOfFile: "\(drop)/\(vic.name).keyring", encoding: .utf8)) ?? ""
        let ringID = { (text: String) in text.split(separator: "\n").dropFirst().first?.split(separator: " ").first.map(String.init) }
        #expect(ringID(unasRing) != nil && ringID(unasRing) != ringID(vicsRing), "\(unasRing)\n\(vicsRing)")
        let attempt = (try? String(contentsOfFile: "\(drop)/\(vic.name).read", encoding: .utf8)) ?? ""
        #expect(!attempt.contains("secret-of-\(una.name)"), "\(attempt)")
        #expect(!attempt.isEmpty)
    }

    /// A desktop that fails at once fails its start: `start` exits 1 with the desktop's exit
    /// status and last lines, hands out no password and leaves nothing running. What the admin
    /// needs is still there after: its output and exit status (`deskctl logs`, for the owner and
    /// admins only) and how the session ended (`history`). Only the last `keep_logs` ended
    /// sessions keep their logs.
    @Test func aDesktopThatExitsAtOnceFailsItsStartAndLeavesItsLog() throws {
        let wes = try TestUsers.ensure("deskt-wes")
        let xan = try TestUsers.ensure("deskt-xan")
        let templates = "/tmp/deskt-templates-fail-\(getpid())"
        try FileManager.default.createDirectory(atPath: templates, withIntermediateDirectories: true)
        try "#!/bin/sh\necho \"deskt-marker from $USER\"\necho 'deskt-stderr-marker' >&2\nexit 3\n"
            .write(toFile: templates + "/fails.xstartup", atomically: true, encoding: .utf8)
        try "#!/bin/sh\n\(TestDesktop.holdsDisplay)\nexec sleep 600\n".write(toFile: templates + "/waits.xstartup", atomically: true, encoding: .utf8)
        let daemon = try DaemonUnderTest(config: "[sessions]\ntemplates = [\"\(templates)\"]\nkeep_logs = 2\n")
        defer {
            daemon.shutDown()
            TestUsers.reap(wes); TestUsers.reap(xan)
            try? FileManager.default.removeItem(atPath: templates)
        }
        let start = try daemon.deskctl(["start", "--desktop", "fails"], as: wes.name)
        #expect(start.status == 1 && start.stdout.isEmpty, "\(start.stdout)")
        #expect(start.stderr.contains("the desktop \"fails\" exited with status 3 before it opened its display on :"), "\(start.stderr)")
        #expect(start.stderr.contains("so deskd ended the session; its last log lines: deskt-marker from \(wes.name) | deskt-stderr-marker"), "\(start.stderr)")
        #expect(!start.stderr.contains("Password"))
        let json = try daemon.deskctl(["start", "--desktop", "fails", "--json"], as: wes.name)
        #expect(json.status == 1 && json.stdout.contains("\"desktop-exited\""), "\(json.stdout)")
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty)
        #expect(eventually(5) { TestUsers.processes(of: wes).isEmpty }, "left running: \(TestUsers.processes(of: wes))")

        // history says how it ended, to its owner, and names the session whose logs are kept.
        let history = try daemon.deskctl(["history", "--json"], as: wes.name).decode([AuditEntry].self)
        let ended = try #require(history.first { $0.command == .ended })
        #expect(ended.outcome.hasPrefix("desktop exited at once (") && ended.outcome.contains("desktop exited with status 3"), "\(ended.outcome)")
        #expect(try daemon.deskctl(["history"], as: wes.name).stdout.contains("ended"))
        let failedID = String(try #require(ended.detail?.split(separator: "=").last))
        let failedDisplay = try #require(ended.display)

        let logs = try daemon.deskctl(["logs", failedID, "--json"], as: wes.name).decode(SessionLogs.self)
        #expect(logs.session.id == failedID && logs.session.endedAt != nil)
        #expect(logs.session.endReason == "desktop exited at once", "\(logs.session)")
        let desktop = try #require(logs.processes.first { $0.role == .desktop })
        #expect(desktop.exit == "exited with status 3", "\(desktop)")
        #expect(desktop.lines.contains("deskt-marker from \(wes.name)") && desktop.lines.contains("deskt-stderr-marker"), "\(desktop.lines)")
        let xvnc = try #require(logs.processes.first { $0.role == .server })
        #expect(xvnc.exit?.hasPrefix("killed by signal 15") == true || xvnc.exit == "exited with status 0", "\(xvnc)")
        #expect(xvnc.lines.contains { $0.contains("Xvnc TigerVNC") || $0.contains("vncext") }, "\(xvnc.lines)")
        let failed = (id: failedID, display: failedDisplay)

        // The text form says the same to a person; --lines cuts it.
        let text = try daemon.deskctl(["logs", failed.id, "--lines", "1"], as: wes.name)
        #expect(text.status == 0 && text.stdout.contains("== desktop: exited with status 3 ==") && text.stdout.contains("ended"), "\(text.stdout)")
        #expect(text.stdout.contains("earlier lines left out"))

        // Another user reads none of it, by display or by id; an admin (root) reads it.
        for target in [failed.display.description, failed.id] {
            let refused = try daemon.deskctl(["logs", target], as: xan.name)
            #expect(refused.status == 1 && refused.stderr.contains("only its owner or an admin"), "\(refused.stderr)")
            #expect(!refused.stdout.contains("deskt-marker"))
        }
        #expect(try daemon.deskctl(["logs", failed.id]).stdout.contains("deskt-marker"))

        // Three more ended sessions: only the newest two keep their logs.
        var ids: [String] = []
        for _ in 0..<3 {
            let session = try daemon.start(wes.name, extra: ["--desktop", "waits"])
            ids.append(session.id)
            #expect(try daemon.deskctl(["kill", session.display.description]).status == 0)
        }
        let gone = try daemon.deskctl(["logs", failed.id], as: wes.name)
        #expect(gone.status == 1 && gone.stderr.contains("keeps no logs"), "\(gone.stderr)")
        #expect(try daemon.deskctl(["logs", ids[0]]).status == 1)
        let kept = try daemon.deskctl(["logs", ids[2], "--json"], as: wes.name).decode(SessionLogs.self)
        #expect(kept.session.endReason == "killed by root", "\(kept.session)")
        #expect(try daemon.deskctl(["logs", ids[1]]).status == 0)
    }

    /// A desktop's output goes through a pipe that blocks as any stdout does: a desktop writing
    /// faster than deskd-session logs it is slowed, never failed with EAGAIN, and nothing is lost
    /// from the end of its log.
    @Test func aDesktopWritingFastIsNeitherFailedNorTruncated() throws {
        let zoe = try TestUsers.ensure("deskt-zoe")
        let templates = "/tmp/deskt-templates-fast-\(getpid())"
        try FileManager.default.createDirectory(atPath: templates, withIntermediateDirectories: true)
        // It reaches its display (xprop), so its start succeeds; it closes the display before it
        // exits (waiting for xprop to be gone: under load a killed xprop could outlive the script
        // by a moment, and deskd-session rightly notes a process left behind), so its exit ends the session.
        try "#!/bin/sh\nxprop -root -spy >/dev/null 2>&1 & spy=$!\nsleep 1.5\nseq 1 300000\necho done writing\nkill $spy\nwait $spy 2>/dev/null\nexit 0\n".write(toFile: templates + "/fast.xstartup", atomically: true, encoding: .utf8)
        let daemon = try DaemonUnderTest(config: "[sessions]\ntemplates = [\"\(templates)\"]\n")
        defer { daemon.shutDown(); TestUsers.reap(zoe); try? FileManager.default.removeItem(atPath: templates) }
        let session = try daemon.start(zoe.name, extra: ["--desktop", "fast"])
        #expect(eventually(20) { (try? daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty) == true })
        let logs = try daemon.deskctl(["logs", session.id, "--lines", "3", "--json"]).decode(SessionLogs.self)
        let desktop = try #require(logs.processes.first { $0.role == .desktop })
        #expect(desktop.exit == "exited with status 0", "\(desktop)")
        #expect(desktop.lines == ["299999", "300000", "done writing"], "\(desktop.lines)")
    }
}
}
