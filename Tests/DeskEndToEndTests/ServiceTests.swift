import DeskPOSIX
import DeskClient
import DeskCore
import DeskLinux
import VNCViewer
import Foundation
import Glibc
import Testing

/// deskd as a system service: honest readiness, reload on SIGHUP, status, real desktops.
extension EndToEnd {
@Suite struct ServiceTests {
    /// A datagram socket standing in for systemd's $NOTIFY_SOCKET.
    final class NotifySocket {
        let path: String
        let fd: Int32

        init() throws {
            path = "/tmp/deskt-notify-\(UUID().uuidString.prefix(8)).sock"
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard UnixSocketAddress(path)!.withSockaddr({ bind(fd, $0, $1) }) == 0 else { throw POSIXError(.EADDRINUSE) }
        }

        deinit { close(fd); unlink(path) }

        /// The next message, if one comes within `milliseconds`.
        func next(within milliseconds: Int32 = 10_000) -> String? {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, milliseconds) == 1 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : nil
        }
    }

    @Test func readinessReloadAndStopAreReportedToSystemd() throws {
        let notify = try NotifySocket()
        let daemon = try DaemonUnderTest(environment: ["NOTIFY_SOCKET": notify.path])
        defer { daemon.shutDown() }
        // READY=1 arrives, and by then the socket answers (DaemonUnderTest waited for a ping).
        let ready = try #require(notify.next())
        #expect(ready.hasPrefix("READY=1") && ready.contains("STATUS=serving \(daemon.socket)"))
        kill(try #require(daemon.process?.processIdentifier), SIGHUP)
        #expect(notify.next()?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true)
        #expect(notify.next() == "READY=1")
        daemon.process?.terminate()
        #expect(notify.next() == "STOPPING=1")
    }

    /// Under systemd, deskd's stderr is the journal ($JOURNAL_STREAM set), which every member of
    /// adm reads, not only a desktop's owner. So a session's output stays in its kept logs
    /// (`deskctl logs`, the owner's and admins' alone) unless the admin sets
    /// sessions.journal_output; then deskd hands its stderr to each deskd-session, which copies
    /// the session's output there with the session's prefix. Every start failed that way once
    /// ("could not start deskd-session: … Bad file descriptor"). Issue 26, item 7.
    @Test func underTheJournalADesktopsOutputReachesDeskdsStderrOnlyWithJournalOutputOn() throws {
        let tess = try TestUsers.ensure("deskt-tess")
        let daemon = try DaemonUnderTest(environment: ["JOURNAL_STREAM": "8:1"])
        defer { daemon.shutDown(); TestUsers.reap(tess) }
        let banner = { (session: Session) -> String? in
            let logs = try? daemon.deskctl(["logs", session.id, "--json"]).decode(SessionLogs.self)
            return logs?.processes.first { $0.role == .server }?.lines.first { $0.contains("Xvnc TigerVNC") || $0.contains("vncext") }
        }

        // By default: Xvnc's banner is in the session's own log, and not in the journal.
        let kept = try daemon.start(tess.name)
        #expect(ProcFS.isAlive(kept.pid))
        var keptBanner: String?
        #expect(eventually(10) { keptBanner = banner(kept); return keptBanner != nil }, "deskctl logs has no Xvnc banner")
        usleep(300_000)   // a copy to stderr would follow the log file's line within microseconds
        #expect(!daemon.logText.contains("[\(kept.id) "), "session output reached deskd's stderr:\n\(daemon.logText)")
        #expect(!daemon.logText.contains(try #require(keptBanner)), "Xvnc's banner reached deskd's stderr:\n\(daemon.logText)")

        // The admin turns the copy on and reloads: the next desktop's output reaches the journal,
        // as "[ID :N server] Xvnc TigerVNC …"; the running one keeps what it started with.
        try "[sessions]\njournal_output = true\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(try #require(daemon.process?.processIdentifier), SIGHUP)
        #expect(eventually { daemon.logText.contains("configuration reloaded") }, "\(daemon.logText)")
        let copied = try daemon.start(tess.name)
        #expect(ProcFS.isAlive(copied.pid))
        #expect(eventually(10) { daemon.logText.contains("[\(copied.id) \(copied.display) server] ") }, "\(daemon.logText)")
        #expect(banner(copied) != nil, "the kept log has the output too")
        #expect(!daemon.logText.contains("[\(kept.id) "))
        #expect(try daemon.deskctl(["kill", "--all"]).status == 0)
    }

    @Test func sighupReloadsTheConfigurationWithoutTouchingSessions() throws {
        let tina = try TestUsers.ensure("deskt-tina")
        let daemon = try DaemonUnderTest(config: "[limits]\nmax_sessions_per_user = 1\n")
        defer { daemon.shutDown(); TestUsers.reap(tina) }
        let first = try daemon.start(tina.name)
        #expect(try daemon.deskctl(["start", "--user", tina.name]).stderr.contains("limits.max_sessions_per_user (1)"))

        // The admin raises the limit and reloads: the running session is untouched.
        try "[limits]\nmax_sessions_per_user = 2\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(try #require(daemon.process?.processIdentifier), SIGHUP)
        #expect(eventually { daemon.logText.contains("configuration reloaded") })
        let second = try daemon.start(tina.name)
        #expect(second.display != first.display && ProcFS.isAlive(first.pid))

        // A mistake in the file is refused as a whole: the daemon keeps serving with the old settings.
        try "[limits]\nmax_sessions_per_user = \"many\"\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(try #require(daemon.process?.processIdentifier), SIGHUP)
        #expect(eventually { daemon.logText.contains("configuration not reloaded") })
        #expect(daemon.logText.contains(":2: limits.max_sessions_per_user must be a whole number"))
        #expect(daemon.isRunning)
        let third = try daemon.deskctl(["start", "--user", tina.name])
        #expect(third.stderr.contains("limits.max_sessions_per_user (2)"))
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.count == 2)
    }

    @Test func statusShowsTheDaemonAndItsSessions() throws {
        let uma = try TestUsers.ensure("deskt-uma")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(uma) }
        _ = try daemon.start(uma.name)
        let status = try daemon.deskctl(["status", "--json"]).decode(DaemonStatus.self)
        #expect(status.daemonVersion == DeskVersion.current && status.pid == daemon.process?.processIdentifier)
        #expect(status.socket == daemon.socket && status.configurationFile == daemon.configPath)
        #expect(status.sessions == 1 && status.users == 1 && status.sessionsByState == ["ready": 1] && status.maxSessionsPerUser == 4)
        // Anyone may ask; the text fits 80 columns.
        let text = try daemon.deskctl(["status"], as: uma.name)
        #expect(text.status == 0 && text.stdout.hasPrefix("deskd    \(DeskVersion.current), pid "))
        #expect(text.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 })
    }

    @Test(.enabled(if: access("/usr/bin/openbox", X_OK) == 0, "needs openbox (scripts/install-deps installs it)"))
    func anOpenboxDesktopShowsSomethingOverRFB() throws {
        let vera = try TestUsers.ensure("deskt-vera")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(vera) }
        let session = try daemon.start(vera.name, extra: ["--desktop", "openbox", "--geometry", "1024x768"])
        #expect(eventually(10) {
            TestUsers.processes(of: vera).contains { ProcFS.executable(of: $0) == "/usr/bin/openbox" }
        }, "openbox is not running; its logs:\n\((try? daemon.deskctl(["logs", session.id]))?.stdout ?? "(none)")")
        // A screenshot over RFB with the session's password: not one flat colour (the xterm and the background).
        let viewer = try VNCConnection(session.endpoint, password: session.password)
        defer { viewer.close() }
        var colours = 0
        // Up to 30 s: a user's first xterm after fontconfig's caches went stale (install-deps
        // runs apt) can take over 10 s on a loaded 2-core machine, and CI once saw exactly that.
        #expect(eventually(30) {
            _ = viewer.refresh()
            colours = Set(viewer.pixels).count
            return colours > 2
        }, "the screen has \(colours) colour(s); the session's logs:\n\((try? daemon.deskctl(["logs", session.id]))?.stdout ?? "(none)")")
    }

    @Test func aUsersOwnXstartupRunsOnlyWhenTheConfigAllowsIt() throws {
        let wes = try TestUsers.ensure("deskt-wes")
        let marker = wes.home + "/.deskt-xstartup-ran"
        let script = wes.home + "/.vnc/xstartup"
        try FileManager.default.createDirectory(atPath: wes.home + "/.vnc", withIntermediateDirectories: true)
        try "#!/bin/sh\ntouch \"$HOME/.deskt-xstartup-ran\"\nexec xterm\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        for path in [wes.home + "/.vnc", script] { chown(path, wes.uid, wes.gid) }
        defer { try? FileManager.default.removeItem(atPath: wes.home + "/.vnc"); unlink(marker) }

        let off = try DaemonUnderTest()
        _ = try off.start(wes.name)
        off.shutDown()
        #expect(!FileManager.default.fileExists(atPath: marker), "user_xstartup is off by default")

        let on = try DaemonUnderTest(config: "[sessions]\nuser_xstartup = true\n")
        defer { on.shutDown(); TestUsers.reap(wes) }
        _ = try on.start(wes.name, extra: ["--desktop", "xterm"])
        usleep(300_000)
        #expect(!FileManager.default.fileExists(atPath: marker), "an explicit --desktop wins")
        _ = try on.start(wes.name)
        #expect(eventually { FileManager.default.fileExists(atPath: marker) })
        var info = stat()
        #expect(stat(marker, &info) == 0 && info.st_uid == wes.uid, "it ran as the user")

        // Where TigerVNC 1.14 and later keep it, ~/.config/tigervnc/xstartup, when there is no ~/.vnc one.
        let config = wes.home + "/.config/tigervnc"
        let tigervncMarker = wes.home + "/.deskt-tigervnc-xstartup-ran"
        defer { try? FileManager.default.removeItem(atPath: wes.home + "/.config"); unlink(tigervncMarker) }
        try FileManager.default.removeItem(atPath: wes.home + "/.vnc")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try "#!/bin/sh\ntouch \"$HOME/.deskt-tigervnc-xstartup-ran\"\nexec xterm\n".write(toFile: config + "/xstartup", atomically: true, encoding: .utf8)
        chmod(config + "/xstartup", 0o755)
        for path in [wes.home + "/.config", config, config + "/xstartup"] { chown(path, wes.uid, wes.gid) }
        _ = try on.start(wes.name)
        #expect(eventually { FileManager.default.fileExists(atPath: tigervncMarker) }, "~/.config/tigervnc/xstartup did not run")
        #expect(stat(tigervncMarker, &info) == 0 && info.st_uid == wes.uid, "it ran as the user")
    }
}
}
