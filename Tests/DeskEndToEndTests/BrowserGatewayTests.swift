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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
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

    @Test func aGatewayOffTheHostSaysHowToTurnItOn() throws {
        let owner = try TestUsers.ensure("deskt-olga")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name)
        let result = try daemon.deskctl(["url", session.display.description, "--json"], as: owner.name)
        #expect(result.status == 1)
        #expect(result.stdout.contains("\"gateway-off\"") && result.stdout.contains("[web]"))
    }
}
}
