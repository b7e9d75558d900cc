import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// deskd's own browser gateway, end to end: a real deskd with `[web]` on loopback, a real
/// desktop, `deskctl url`, and a real headless Chromium opening the link in Debian's noVNC.
extension EndToEnd {
@Suite(.enabled(if: TestEnvironment.canRun && BrowserHarness.isReady, BrowserHarness.skipReason))
struct BrowserGatewayTests {
    /// A free loopback port for the gateway (the kernel's pick, let go at once).
    static func freePort() throws -> Int {
        try #require(InternetSocketAddress.freeLoopbackPort())
    }

    static func link(_ daemon: DaemonUnderTest, _ display: Display, viewOnly: Bool = false, as user: String) throws -> BrowserLink {
        let result = try daemon.deskctl(["url", display.description, "--json"] + (viewOnly ? ["--view-only"] : []), as: user)
        try #require(result.status == 0, "deskctl url: \(result.stdout)\(result.stderr)")
        return try result.decode(BrowserLink.self)
    }

    @Test func aLinkOpensTheDesktopOnceAndAViewOnlyLinkTakesNoKeys() throws {
        let owner = try TestUsers.ensure("deskt-olga")
        let port = try Self.freePort()
        let daemon = try DaemonUnderTest(config: "[web]\nlisten = \"127.0.0.1:\(port)\"\n")
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name)

        // The owner's link opens the desktop in Chromium: noVNC's canvas shows the xterm, and
        // keys typed into it reach the xterm's shell (it writes a file of the owner's).
        let link = try Self.link(daemon, session.display, as: owner.name)
        #expect(link.url.hasPrefix("http://127.0.0.1:\(port)/open#token="))
        let typed = owner.home + "/typed-\(UUID().uuidString.prefix(8))"
        defer { unlink(typed) }
        let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-gateway.png").path
        let page = try BrowserHarness.open(link.url, screenshot: screenshot, type: "echo typed > \(typed)", viewport: "640x480")
        #expect(page.outcome.connected && page.outcome.nonBlank, "\(page.outcome.summary)")
        #expect(page.outcome.status?.contains(owner.name) == true, "\(page.outcome.summary)")
        #expect(eventually(5) { (try? String(contentsOfFile: typed, encoding: .utf8)) == "typed\n" }, "the keys did not reach the xterm: \(page.outcome.summary)")

        // The same link again opens nothing.
        let again = try BrowserHarness.open(link.url, timeout: 10, expectRefusal: true)
        #expect(again.outcome.refused && !again.outcome.connected, "\(again.outcome.summary)")
        #expect(again.outcome.pageText?.contains("already used or has expired") == true)

        // A view-only link shows the desktop, but what a hostile page types never arrives: the
        // harness turns noVNC's own view-only off, so only the gateway can drop the keys.
        let watched = owner.home + "/watched-\(UUID().uuidString.prefix(8))"
        defer { unlink(watched) }
        let viewOnly = try Self.link(daemon, session.display, viewOnly: true, as: owner.name)
        let view = try BrowserHarness.open(viewOnly.url, type: "echo typed > \(watched)", ignoreViewOnly: true, viewport: "640x480")
        #expect(view.outcome.connected && view.outcome.nonBlank, "\(view.outcome.summary)")
        Thread.sleep(forTimeInterval: 1)
        #expect(access(watched, F_OK) != 0, "a view-only link typed into the desktop")

        // Another user may not make a link to the session, and history says who made which.
        let stranger = try TestUsers.ensure("deskt-pavel")
        let refused = try daemon.deskctl(["url", session.display.description], as: stranger.name)
        #expect(refused.status == 1 && refused.stderr.contains("belongs to another user"))
        let history = try daemon.deskctl(["history", "--json"]).decode([AuditEntry].self)
        #expect(history.filter { $0.command == .url && $0.ok }.map(\.outcome) == ["link issued", "view-only link issued"])
        #expect(!history.contains { ($0.detail ?? "").contains(String(link.url.split(separator: "=").last ?? "-")) })
    }

    /// The line of a metric in `deskctl metrics`, e.g. `deskd_viewers{kind="browser"}`, as its value.
    static func value(_ metric: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(metric + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func aBrowserIsAViewerInListReapAndMetricsAndKillClosesIt() throws {
        let owner = try TestUsers.ensure("deskt-olga")
        let port = try Self.freePort()
        let daemon = try DaemonUnderTest(config: "[web]\nlisten = \"127.0.0.1:\(port)\"\n")
        defer { daemon.shutDown(); TestUsers.reap(owner) }

        // start --web hands out the link with the session, and prints it for a person too.
        struct Started: Decodable { let display: Display; let link: BrowserLink? }
        let result = try daemon.deskctl(["start", "--user", owner.name, "--web", "--ttl", "5m", "--json"])
        try #require(result.status == 0, "start --web: \(result.stdout)\(result.stderr)")
        let started = try result.decode(Started.self)
        let link = try #require(started.link, "start --web gave no link: \(result.stdout)")
        #expect(link.url.hasPrefix("http://127.0.0.1:\(port)/open#token=") && !link.viewOnly)
        #expect(link.expiresAt.timeIntervalSinceNow > 240)
        let printed = try daemon.deskctl(["start", "--user", owner.name, "--web"])
        #expect(printed.status == 0 && printed.stdout.contains("Browser:  http://127.0.0.1:\(port)/open#token="), "\(printed.stdout)")

        let browser = try BrowserHarness.Staying(link.url, seconds: 60)
        try #require(browser.waitUntilConnected(), "the browser did not connect: \((try? browser.finish())?.outcome.summary ?? "no report")")
        func mine() throws -> Session? {
            try daemon.deskctl(["list", "--json"], as: owner.name).decode(SessionList.self).sessions.first { $0.display == started.display }
        }
        // The browser is one of Xvnc's viewers: list counts it, and an idle reap passes the session by.
        #expect(eventually(5) { (try? mine())?.clients == 1 }, "list does not count the browser: \(String(describing: try? mine()))")
        let idle = try daemon.deskctl(["reap", "--idle", "1s", "--dry-run", "--json"]).decode([Session].self)
        #expect(!idle.contains { $0.display == started.display }, "reap would kill a session watched in a browser")

        // deskctl metrics (admins only) shows the session, the browser and the link's use.
        let metrics = try daemon.deskctl(["metrics"])
        #expect(metrics.status == 0, "\(metrics.stderr)")
        let text = metrics.stdout
        #expect(Self.value("deskd_sessions{state=\"ready\"}", in: text) == 2, "\(text)")
        #expect(Self.value("deskd_viewers{kind=\"browser\"}", in: text) == 1, "\(text)")
        #expect(Self.value("deskd_viewers{kind=\"native\"}", in: text) == 0, "\(text)")
        #expect(Self.value("deskd_session_starts_total{result=\"started\"}", in: text) == 2, "\(text)")
        #expect(Self.value("deskd_gateway_tokens_total{result=\"exchanged\"}", in: text) == 1, "\(text)")
        #expect(Self.value("deskd_gateway_relays", in: text) == 1, "\(text)")
        #expect(Self.value("deskd_browser_links_outstanding", in: text) == 1, "the second start's link is outstanding: \(text)")
        #expect((Self.value("process_resident_memory_bytes", in: text) ?? 0) > Double(1 << 20), "\(text)")
        #expect(text.contains("deskd_session_start_seconds_bucket"), "\(text)")
        #expect(!text.contains(owner.name), "a metric names a user")
        let refused = try daemon.deskctl(["metrics"], as: owner.name)
        #expect(refused.status == 1 && refused.stderr.contains("for admins"), "\(refused.stderr)")

        // A kill closes the browser's connection at once, and the metrics say how it ended.
        let kill = try daemon.deskctl(["kill", started.display.description])
        #expect(kill.status == 0, "\(kill.stderr)")
        let run = try browser.finish()
        #expect(run.outcome.droppedAfter != nil, "the browser stayed connected after the kill: \(run.outcome.summary)")
        let after = try daemon.deskctl(["metrics"]).stdout
        #expect(Self.value("deskd_sessions_ended_total{reason=\"killed\"}", in: after) == 1, "\(after)")
        #expect(Self.value("deskd_viewers{kind=\"browser\"}", in: after) == 0, "\(after)")
        #expect(Self.value("deskd_gateway_relays", in: after) == 0, "\(after)")
    }

    @Test func aSessionOnATCPPortOpensInTheBrowserToo() throws {
        let owner = try TestUsers.ensure("deskt-olga")
        let port = try Self.freePort()
        let daemon = try DaemonUnderTest(config: "[network]\nlisten = \"loopback\"\n[web]\nlisten = \"127.0.0.1:\(port)\"\n")
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name)
        #expect(session.rfbPort != nil && session.rfbSocket == nil, "the session is not on TCP: \(session)")
        let link = try Self.link(daemon, session.display, as: owner.name)
        let page = try BrowserHarness.open(link.url, viewport: "640x480")
        #expect(page.outcome.connected && page.outcome.nonBlank, "\(page.outcome.summary)")
        #expect(page.outcome.status?.contains(owner.name) == true, "\(page.outcome.summary)")
    }

    @Test func aGatewayOffTheHostSaysHowToTurnItOn() throws {
        let owner = try TestUsers.ensure("deskt-olga")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name)
        let result = try daemon.deskctl(["url", session.display.description, "--json"], as: owner.name)
        #expect(result.status == 1)
        #expect(result.stdout.contains("\"gateway-off\"") && result.stdout.contains("[web]"))
        // start --web is refused before anything starts.
        let before = try daemon.deskctl(["list", "--json"], as: owner.name).decode(SessionList.self).sessions.count
        let web = try daemon.deskctl(["start", "--web"], as: owner.name)
        #expect(web.status == 1 && web.stderr.contains("[web]"), "\(web.stderr)")
        #expect(try daemon.deskctl(["list", "--json"], as: owner.name).decode(SessionList.self).sessions.count == before)
    }
}
}
