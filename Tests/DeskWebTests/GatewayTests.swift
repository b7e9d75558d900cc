import DeskFrontProtocol
import DeskWeb
import Foundation
import Glibc
import Testing
import TestSupport

/// A gateway on 127.0.0.1 with a fake deskd behind it and a fake Xvnc on a Unix socket, all in
/// this process; the browser is a `RawClient`.
struct GatewayFixture {
    let scratch: Scratch
    let xvnc: FakeVNCServer
    let authority: FakeAuthority
    let gateway: Gateway
    let port: Int

    /// Runs `body` against a fresh gateway and stops everything afterwards.
    static func with(limits: GatewayConfiguration.Limits = .init(), clipboard: GatewayConfiguration.Clipboard = .both,
                     grantPassword: String = "secret12", trustedProxies: Set<String> = [],
                     _ body: (GatewayFixture) async throws -> Void) async throws {
        let scratch = try Scratch()
        _ = scratch.directory("novnc")
        _ = scratch.directory("novnc/app")
        scratch.file("novnc/vnc.html", "<!DOCTYPE html><title>noVNC</title>\n")
        scratch.file("novnc/app/ui.js", "export const UI = {};\n")
        let xvnc = try FakeVNCServer(directory: scratch.path, password: "secret12")
        defer { xvnc.stop() }
        let authority = FakeAuthority(endpoint: xvnc.path, password: grantPassword)
        let configuration = GatewayConfiguration(host: "127.0.0.1", port: 0, novncDirectory: scratch.path + "/novnc", clipboard: clipboard, limits: limits,
                                                 trustedProxies: trustedProxies)
        let gateway = Gateway(configuration: configuration, authority: authority, logger: quietLogger)
        let running = Task { try await gateway.serveOnLoopback() }
        defer { running.cancel() }
        let port = try await gateway.port()
        let fixture = GatewayFixture(scratch: scratch, xvnc: xvnc, authority: authority, gateway: gateway, port: port)
        try await withTaskExecutorPreference(DedicatedThreadExecutor.shared) { try await body(fixture) }
        running.cancel()
        try await running.value
    }

    func client() throws -> RawClient { try RawClient(port: port) }

    /// A link opened: the token traded for the cookie a browser would hold.
    func cookie(viewOnly: Bool = false) async throws -> String {
        let token = await authority.mint(viewOnly: viewOnly)
        let response = try client().request("POST", "/exchange", headers: [("Origin", "http://127.0.0.1")], body: token)
        let setCookie = try #require(response.header("Set-Cookie"))
        return String(setCookie.dropFirst("deskd_gateway=".count).prefix { $0 != ";" })
    }

    /// A WebSocket through the RFB handshake, up to and including Xvnc's ServerInit.
    func relay(cookie: String, clientInit: UInt8 = 1) throws -> RawClient {
        let browser = try client()
        let response = try browser.upgrade(cookie: cookie)
        #expect(response.status == 101)
        #expect(try browser.readRFB(12) == Array("RFB 003.008\n".utf8))
        try browser.sendFrame(Array("RFB 003.008\n".utf8))
        #expect(try browser.readRFB(2) == [1, 1])
        try browser.sendFrame([1])
        #expect(try browser.readRFB(4) == [0, 0, 0, 0])
        try browser.sendFrame([clientInit])
        #expect(try browser.readRFB(FakeVNCServer.serverInit.count) == FakeVNCServer.serverInit)
        return browser
    }
}

/// True once `condition` holds, polling for up to two seconds: the gateway counts a refusal on
/// its event loop, which may be just after the client has seen the refusal itself.
func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<200 {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// Serialized, with the TLS and browser suites nested in it: each runs a gateway, and their
/// clients block (on a thread of their own, `DedicatedThreadExecutor`).
@Suite(.serialized) struct GatewayTests {
    @Test func noVNCsFilesAndTheLinkPageAreServedWithTheirHeaders() async throws {
        try await GatewayFixture.with { fixture in
            let browser = try fixture.client()
            // One kept-alive connection for all of them, as a browser loads noVNC.
            let page = try browser.request("GET", "/vnc.html")
            #expect(page.status == 200 && page.text.contains("noVNC"))
            #expect(page.header("Content-Type") == "text/html; charset=utf-8")
            #expect(page.header("X-Content-Type-Options") == "nosniff")
            #expect(page.header("Referrer-Policy") == "no-referrer")
            // The page is deskd's (its scripts added where it has a head); noVNC's code is asked
            // for again by its tag each time, which gets a 304 with no content when unchanged.
            #expect(page.header("Cache-Control") == "no-cache")
            let script = try browser.request("GET", "/app/ui.js?v=2")
            #expect(script.status == 200 && script.header("Content-Type") == "text/javascript; charset=utf-8")
            #expect(script.header("Cache-Control") == "no-cache")
            let tag = try #require(script.header("ETag"))
            let held = try browser.request("GET", "/app/ui.js", headers: [("If-None-Match", tag)])
            #expect(held.status == 304 && held.body.isEmpty && held.header("ETag") == tag, "\(held.status)")
            #expect(held.header("Content-Length") == nil && held.header("Transfer-Encoding") == nil)
            #expect(try browser.request("GET", "/app/ui.js", headers: [("If-None-Match", "\"stale\"")]).status == 200)
            let viewer = try browser.request("GET", "/deskd-viewer.js")
            #expect(viewer.status == 200 && viewer.text.contains("deskd_token") && viewer.text.contains("history.replaceState"))
            let open = try browser.request("GET", "/open")
            #expect(open.status == 200 && open.text.contains("/open.js"))
            #expect(open.header("Cache-Control") == "no-store")
            #expect(open.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
            let openScript = try browser.request("GET", "/open.js")
            #expect(openScript.text.contains("location.hash") && openScript.text.contains("history.replaceState"))
            // A refusal's sentence is the one the gateway sent (the control protocol's error shape), not one of its own.
            #expect(openScript.text.contains("refusal?.error?.message"))
            for target in ["/../novnc/vnc.html", "/%2e%2e/rfb.sock", "/missing.js", "/app", "/app/"] {
                #expect(try browser.request("GET", target).status == 404, "\(target)")
            }
            #expect(try browser.request("DELETE", "/vnc.html").status == 405)
        }
    }

    @Test func aTokenIsTradedForACookieOnce() async throws {
        try await GatewayFixture.with { fixture in
            let token = await fixture.authority.mint(viewOnly: true)
            let first = try fixture.client().request("POST", "/exchange", headers: [("Origin", "http://127.0.0.1")], body: token)
            #expect(first.status == 200)
            #expect(first.text == #"{"viewOnly":true}"#)
            #expect(first.header("Cache-Control") == "no-store")
            let cookie = try #require(first.header("Set-Cookie"))
            #expect(cookie.hasPrefix("deskd_gateway=c"))
            #expect(cookie.hasSuffix("; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=60"))
            let again = try fixture.client().request("POST", "/exchange", headers: [("Origin", "http://127.0.0.1")], body: token)
            #expect(again.status == 403)
            #expect(again.text.contains("This link was already used or has expired; ask for a new one with deskctl url."))
            #expect(again.header("Set-Cookie") == nil)
            // Another site's page may not trade a token, even a good one.
            let other = await fixture.authority.mint(viewOnly: false)
            #expect(try fixture.client().request("POST", "/exchange", headers: [("Origin", "https://evil.example")], body: other).status == 403)
            #expect(fixture.gateway.metrics.snapshot.exchangesAccepted == 1)
        }
    }

    /// The control protocol's error shape: `{"error":{"code":…,"message":…}}` and nothing else.
    struct ErrorDocument: Decodable, Equatable {
        struct Body: Decodable, Equatable {
            let code: String
            let message: String
        }
        let error: Body

        /// Decodes `response`'s body, refusing a key beyond `error`, `code` and `message`.
        static func decode(_ response: RawClient.Response, sourceLocation: SourceLocation = #_sourceLocation) throws -> ErrorDocument {
            #expect(response.header("Content-Type") == "application/json", sourceLocation: sourceLocation)
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            #expect(object.map { Set($0.keys) } == ["error"], "\(response.text)", sourceLocation: sourceLocation)
            #expect((object?["error"] as? [String: Any]).map { Set($0.keys) } == ["code", "message"], "\(response.text)", sourceLocation: sourceLocation)
            return try JSONDecoder().decode(ErrorDocument.self, from: Data(response.body))
        }
    }

    @Test func aRefusedExchangeAnswersTheControlProtocolsErrorShape() async throws {
        try await GatewayFixture.with { fixture in
            let origin = ("Origin", "http://127.0.0.1")
            let token = await fixture.authority.mint(viewOnly: false)
            #expect(try fixture.client().request("POST", "/exchange", headers: [origin], body: token).status == 200)
            let used = try fixture.client().request("POST", "/exchange", headers: [origin], body: token)
            #expect(used.status == 403)
            #expect(try ErrorDocument.decode(used) == .init(error: .init(code: "link-refused", message: "This link was already used or has expired; ask for a new one with deskctl url.")))
            // A body that is no token at all gets the same answer: nothing tells a guess from a spent link.
            let garbage = try fixture.client().request("POST", "/exchange", headers: [origin], body: "\"}{\\")
            #expect(try ErrorDocument.decode(garbage).error.code == "link-refused")
            let foreign = try fixture.client().request("POST", "/exchange", headers: [("Origin", "https://evil.example")], body: token)
            #expect(foreign.status == 403)
            let refusal = try ErrorDocument.decode(foreign)
            #expect(refusal.error.code == "permission-denied" && refusal.error.message == "This page is not the gateway's own.")
            // docs/schema/error.json, deskctl's error document, takes both.
            for response in [used, foreign] { try Self.expectValidError(response.body) }
        }
    }

    /// `body` against docs/schema/error.json with scripts/validate-json, where Debian's
    /// python3-jsonschema is installed (scripts/install-deps installs it).
    static func expectValidError(_ body: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-gateway-error-\(UUID().uuidString).json")
        try Data(body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try TLSTests.run("/usr/bin/python3", [repository.appendingPathComponent("scripts/validate-json").path, "error", file.path])
        // 3: no python3-jsonschema here, so nothing was checked: that fails too, with the fix.
        #expect(check.status != 3, "the error document was not checked: python3-jsonschema is missing (apt-get install python3-jsonschema; scripts/install-deps installs it)",
                sourceLocation: sourceLocation)
        #expect(check.status == 0 || check.status == 3, "docs/schema/error.json refuses the gateway's error: \(check.output)", sourceLocation: sourceLocation)
    }

    @Test func aCookieOpensTheDesktopThroughSecurityTypeNoneOnce() async throws {
        try await GatewayFixture.with { fixture in
            let cookie = try await fixture.cookie()
            let browser = try fixture.relay(cookie: cookie)
            // The browser's messages reach Xvnc, and Xvnc's answers reach the browser.
            try browser.sendFrame(Messages.setEncodings + Messages.updateRequest)
            #expect(try browser.readRFB(FakeVNCServer.update.count) == FakeVNCServer.update)
            try browser.sendFrame(Messages.keyEvent + Messages.pointerEvent)
            #expect(fixture.xvnc.waitForBytes(client: 0, count: 36) == Messages.setEncodings + Messages.updateRequest + Messages.keyEvent + Messages.pointerEvent)
            #expect(fixture.gateway.relays(sessionID: "3") == 1)
            #expect(fixture.gateway.metrics.snapshot.relaysOpen == 1)

            // The same cookie a second time is refused, and reaches no Xvnc.
            let replay = try fixture.client().upgrade(cookie: cookie)
            #expect(replay.status == 403)
            #expect(replay.text.contains("already used or has expired"))
            #expect(eventually { fixture.gateway.metrics.refusedCount(.cookie) == 1 })

            // deskd closing the session's viewers closes the browser's WebSocket.
            #expect(fixture.gateway.disconnect(sessionID: "3") == 1)
            #expect(browser.closes(within: 2000))
        }
    }

    /// noVNC 1.6 offers ExtendedMouseButtons; the gateway keeps the offer from Xvnc (which
    /// would then measure pointer events otherwise than the filter) and the relay stays in step.
    @Test func aBrowserThatOffersExtendedMouseButtonsStaysInStepWithXvnc() async throws {
        try await GatewayFixture.with { fixture in
            let browser = try fixture.relay(cookie: try await fixture.cookie())
            try browser.sendFrame(Messages.setEncodings([0, Messages.extendedMouseButtons]) + Messages.highPointerEvent
                                  + Messages.pointerEvent + Messages.updateRequest)
            #expect(try browser.readRFB(FakeVNCServer.update.count) == FakeVNCServer.update)
            let forwarded = Messages.setEncodings([0]) + Messages.highPointerEvent + Messages.pointerEvent + Messages.updateRequest
            #expect(fixture.xvnc.waitForBytes(client: 0, count: forwarded.count) == forwarded)
        }
    }

    /// The same against Debian's own Xtigervnc: it acknowledges no ExtendedMouseButtons, takes
    /// button 8 in a 6-byte PointerEvent, and answers every update request.
    @Test(.enabled(if: RealXvnc.isInstalled, "needs Xtigervnc (tigervnc-standalone-server)"))
    func aRealXvncStaysInStepWithABrowserThatOffersExtendedMouseButtons() async throws {
        let scratch = try Scratch()
        let xvnc = try RealXvnc(directory: scratch.path, password: "secret12")
        defer { xvnc.stop() }
        let authority = FakeAuthority(endpoint: xvnc.socket, password: "secret12", xvnc: xvnc.pid)
        let gateway = Gateway(configuration: GatewayConfiguration(host: "127.0.0.1", port: 0, novncDirectory: scratch.path),
                              authority: authority, logger: quietLogger)
        let running = Task { try await gateway.serveOnLoopback() }
        defer { running.cancel() }
        let port = try await gateway.port()
        try await withTaskExecutorPreference(DedicatedThreadExecutor.shared) {
            let token = await authority.mint(viewOnly: false)
            let exchange = try RawClient(port: port).request("POST", "/exchange", headers: [("Origin", "http://127.0.0.1")], body: token)
            let cookie = try #require(exchange.header("Set-Cookie")).dropFirst("deskd_gateway=".count).prefix { $0 != ";" }
            let browser = try RawClient(port: port)
            #expect(try browser.upgrade(cookie: String(cookie)).status == 101)
            #expect(try browser.readRFB(12) == Array("RFB 003.008\n".utf8))
            try browser.sendFrame(Array("RFB 003.008\n".utf8))
            #expect(try browser.readRFB(2) == [1, 1])
            try browser.sendFrame([1])
            #expect(try browser.readRFB(4) == [0, 0, 0, 0])
            try browser.sendFrame([1])
            let serverInit = try browser.readRFB(24)
            #expect(serverInit[0..<4] == [0, UInt8(RealXvnc.width), 0, UInt8(RealXvnc.height)] && serverInit[4] == 32)
            _ = try browser.readRFB(Int(serverInit[20...23].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))

            let request: [UInt8] = [3, 0, 0, 0, 0, 0, 0, UInt8(RealXvnc.width), 0, UInt8(RealXvnc.height)]
            try browser.sendFrame(Messages.setEncodings([0, Messages.extendedMouseButtons]) + Messages.highPointerEvent
                                  + Messages.pointerEvent + request)
            #expect(try Self.readUpdate(browser) == [0])
            // Button 8 pressed and released, as 1.12 reads them (6 bytes), then more requests.
            for _ in 0..<3 {
                try browser.sendFrame([5, 0x80, 0, 30, 0, 40] + [5, 0, 0, 31, 0, 41] + request)
                #expect(try Self.readUpdate(browser) == [0])
            }
            #expect(!browser.closes(within: 300))
            #expect(gateway.relays(sessionID: "3") == 1)
        }
    }

    /// Reads server messages up to the end of the next FramebufferUpdate; its rectangles'
    /// encodings (Raw only, as asked: an ExtendedMouseButtons acknowledgement would be -316).
    static func readUpdate(_ browser: RawClient) throws -> [Int32] {
        func u16() throws -> Int { try browser.readRFB(2).reduce(0) { $0 << 8 | Int($1) } }
        func u32() throws -> UInt32 { try browser.readRFB(4).reduce(0) { $0 << 8 | UInt32($1) } }
        while true {
            switch try browser.readRFB(1)[0] {
            case 0:
                _ = try browser.readRFB(1)
                var encodings: [Int32] = []
                for _ in 0..<(try u16()) {
                    _ = try browser.readRFB(4)
                    let width = try u16(), height = try u16()
                    let encoding = Int32(bitPattern: try u32())
                    encodings.append(encoding)
                    if encoding == 0 { _ = try browser.readRFB(width * height * 4) }
                }
                return encodings
            case 2:
                continue
            case 3:
                _ = try browser.readRFB(3)
                _ = try browser.readRFB(Int(try u32()))
            case let type:
                throw RawClient.Failure(description: "Xvnc sent message type \(type), which this test does not read")
            }
        }
    }

    /// Xvnc sends far more than the browser reads for a while: the relay stops reading Xvnc while
    /// the browser's side is full, and every byte still arrives, in order.
    @Test func aFloodFromTheDesktopWaitsForASlowBrowserAndArrivesWhole() async throws {
        try await GatewayFixture.with { fixture in
            let browser = try fixture.relay(cookie: try await fixture.cookie())
            try browser.sendFrame([3, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 1])
            usleep(500_000)
            let start = ContinuousClock.now
            #expect(try browser.readRFB(FakeVNCServer.flood.count) == FakeVNCServer.flood)
            #expect(ContinuousClock.now - start < .seconds(20))
            // The relay still carries the browser's messages afterwards.
            try browser.sendFrame(Messages.updateRequest)
            #expect(try browser.readRFB(FakeVNCServer.update.count) == FakeVNCServer.update)
        }
    }

    @Test func aWrongOriginIsRefusedAndDoesNotSpendTheCookie() async throws {
        try await GatewayFixture.with { fixture in
            let cookie = try await fixture.cookie()
            for origin in ["https://evil.example", "http://127.0.0.1:1", "null", nil] as [String?] {
                let response = try fixture.client().upgrade(origin: origin, cookie: cookie)
                #expect(response.status == 403, "\(origin ?? "no origin")")
            }
            #expect(try fixture.client().upgrade(cookie: nil).status == 403)
            #expect(try fixture.client().upgrade(cookie: "forged").status == 403)
            #expect(eventually { fixture.gateway.metrics.refusedCount(.origin) == 4 })
            _ = try fixture.relay(cookie: cookie)
        }
    }

    @Test func viewOnlyDropsKeyboardPointerAndClipboardWhateverTheBrowserSends() async throws {
        try await GatewayFixture.with { fixture in
            let browser = try fixture.relay(cookie: try await fixture.cookie(viewOnly: true), clientInit: 0)
            try browser.sendFrame(Messages.keyEvent + Messages.pointerEvent + Messages.cutText + Messages.qemuKey)
            try browser.sendFrame(Messages.updateRequest)
            #expect(try browser.readRFB(FakeVNCServer.update.count) == FakeVNCServer.update)
            #expect(fixture.xvnc.waitForBytes(client: 0, count: 10) == Messages.updateRequest)
            // It asked for an exclusive session; the gateway asked Xvnc for a shared one.
            #expect(fixture.xvnc.clientInits.withLock { $0 } == [1])
            // A message the filter cannot measure ends the relay.
            try browser.sendFrame([99, 0, 0, 0])
            #expect(browser.closes(within: 2000))
            #expect(eventually { fixture.gateway.metrics.refusedCount(.rfb) == 1 })
        }
    }

    @Test func aDesktopThatRefusesThePasswordIsNamedToTheBrowser() async throws {
        try await GatewayFixture.with(grantPassword: "wrong123") { fixture in
            let browser = try fixture.client()
            #expect(try browser.upgrade(cookie: try await fixture.cookie()).status == 101)
            #expect(try browser.readRFB(12) == Array("RFB 003.008\n".utf8))
            try browser.sendFrame(Array("RFB 003.008\n".utf8))
            #expect(try browser.readRFB(1) == [0])
            let length = try browser.readRFB(4).reduce(0) { $0 << 8 | Int($1) }
            #expect(String(decoding: try browser.readRFB(length), as: UTF8.self).contains("could not be reached"))
            #expect(browser.closes(within: 2000))
            #expect(eventually { fixture.gateway.metrics.refusedCount(.desktop) == 1 })
        }
    }

    // MARK: Hostile browsers

    @Test func oversizedUnmaskedAndTextFramesAreRefusedAndTheGatewayServesOn() async throws {
        var limits = GatewayConfiguration.Limits()
        limits.maxFrameBytes = 4096
        try await GatewayFixture.with(limits: limits) { fixture in
            let oversized = try fixture.relay(cookie: try await fixture.cookie())
            try oversized.sendFrame([UInt8](repeating: 3, count: 5000))
            #expect(oversized.closes(within: 2000))

            let unmasked = try fixture.relay(cookie: try await fixture.cookie())
            try unmasked.sendFrame(Messages.updateRequest, masked: false)
            #expect(unmasked.closes(within: 2000))

            let text = try fixture.relay(cookie: try await fixture.cookie())
            try text.sendFrame(opcode: 1, Array("hello".utf8))
            #expect(text.closes(within: 2000))

            // A frame header that claims 2^63 bytes.
            let absurd = try fixture.client()
            #expect(try absurd.upgrade(cookie: try await fixture.cookie()).status == 101)
            try absurd.send([0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
            #expect(absurd.closes(within: 2000))

            #expect(eventually { fixture.gateway.metrics.refusedCount(.frame) == 4 })
            #expect(try fixture.client().request("GET", "/vnc.html").status == 200)
            _ = try fixture.relay(cookie: try await fixture.cookie())
        }
    }

    @Test func aRequestThatDribblesItsHeadersIsCutOff() async throws {
        var limits = GatewayConfiguration.Limits()
        limits.handshakeTimeout = .milliseconds(800)
        try await GatewayFixture.with(limits: limits) { fixture in
            let slow = try fixture.client()
            let start = ContinuousClock.now
            var cutOff = false
            for byte in Array("GET /websockify HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n".utf8) {
                guard (try? slow.send([byte])) != nil, !slow.closes(within: 100) else { cutOff = true; break }
            }
            #expect(cutOff)
            #expect(ContinuousClock.now - start < .seconds(3))
            #expect(eventually { fixture.gateway.metrics.refusedCount(.timeout) == 1 })
            // A connection that never says anything is cut off too.
            #expect(try fixture.client().closes(within: 2000))
            // So is a WebSocket whose browser never answers the gateway's RFB greeting.
            let silent = try fixture.client()
            #expect(try silent.upgrade(cookie: try await fixture.cookie()).status == 101)
            #expect(try silent.readRFB(12) == Array("RFB 003.008\n".utf8))
            #expect(silent.closes(within: 3000))
            #expect(eventually { fixture.gateway.metrics.refusedCount(.timeout) >= 3 })
            #expect(try fixture.client().request("GET", "/vnc.html").status == 200)
        }
    }

    @Test func anOversizedHeaderIsRefused() async throws {
        try await GatewayFixture.with { fixture in
            // One send of 20 kB, which the gateway's first read (64 KiB) takes whole: nothing is
            // left unread when it answers 400 and closes, so the kernel sends the answer and a
            // FIN, never a reset that could overtake it.
            let response = try fixture.client().request("GET", "/vnc.html", headers: [("X-Padding", String(repeating: "a", count: 20000))])
            #expect(response.status == 400)
            #expect(eventually { fixture.gateway.metrics.refusedCount(.malformedRequest) == 1 })
            let after = try fixture.client().request("GET", "/vnc.html")
            #expect(after.status == 200)
        }
    }

    @Test func aThousandConcurrentBogusUpgradesAreRefusedAndTheGatewayServesOn() async throws {
        var limits = GatewayConfiguration.Limits()
        limits.maxConnections = 64
        // The overall cap is what this test is about; every client here is 127.0.0.1.
        limits.maxConnectionsPerAddress = 1000
        try await GatewayFixture.with(limits: limits) { fixture in
            var clients: [RawClient] = []
            for _ in 0..<1000 { clients.append(try fixture.client()) }
            for client in clients {
                // Some are closed by the gateway (over the limit) before they get to send.
                try? client.send("GET /websockify HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nCookie: deskd_gateway=bogus\r\n\r\n")
            }
            var statuses: [Int: Int] = [:]
            for client in clients {
                let status = (try? client.readResponse())?.status ?? 0
                statuses[status, default: 0] += 1
                #expect(client.closes(within: 2000))
            }
            #expect(statuses[101] == nil)
            #expect(statuses.values.reduce(0, +) == 1000)
            let metrics = fixture.gateway.metrics
            #expect(eventually { metrics.refusedCount(.capacity) + metrics.refusedCount(.cookie) == 1000 }, "\(statuses) \(metrics.snapshot)")
            clients.removeAll()
            // Connections are counted out as they close; then the gateway serves as before.
            for _ in 0..<100 where fixture.gateway.metrics.snapshot.connectionsOpen > 0 { usleep(20_000) }
            #expect(fixture.gateway.metrics.snapshot.connectionsOpen == 0)
            #expect(try fixture.client().request("GET", "/vnc.html").status == 200)
            _ = try fixture.relay(cookie: try await fixture.cookie())
        }
    }

    /// Issue 26, item 4: loopback counts against the per-address cap (a local user could hold
    /// every slot); behind a trusted proxy, each browser counts by its X-Forwarded-For.
    @Test func loopbackCountsAgainstThePerAddressCapAndATrustedProxysBrowsersEachForThemselves() async throws {
        var limits = GatewayConfiguration.Limits()
        limits.maxConnectionsPerAddress = 2
        try await GatewayFixture.with(limits: limits) { fixture in
            let held = [try fixture.client(), try fixture.client()]
            #expect(try held[0].request("GET", "/vnc.html").status == 200)
            let third = try fixture.client()
            #expect((try? third.readResponse())?.status == 503)
            #expect(eventually { fixture.gateway.metrics.refusedCount(.addressCapacity) == 1 })
            // Without trust, X-Forwarded-For is the browser's own word, and ignored.
            let claims = try fixture.client()
            #expect((try? claims.request("GET", "/vnc.html", headers: [("X-Forwarded-For", "198.51.100.9")]))?.status != 200)
        }
        try await GatewayFixture.with(limits: limits, trustedProxies: ["127.0.0.1"]) { fixture in
            // Each connection counts for the proxy until its first request, then for its browser.
            var clients: [RawClient] = []
            var statuses: [Int] = []
            for browser in ["198.51.100.4", "198.51.100.4", "198.51.100.4", "198.51.100.5"] {
                let client = try fixture.client()
                clients.append(client)
                statuses.append(try client.request("GET", "/vnc.html", headers: [("X-Forwarded-For", "6.6.6.6, \(browser)")]).status)
            }
            // The third connection of one browser is over its cap; another browser behind the same
            // proxy is not.
            #expect(statuses == [200, 200, 503, 200])
            #expect(fixture.gateway.metrics.refusedCount(.addressCapacity) == 1)
        }
    }

    /// Issue 26, item 4: a relay with nothing either way is closed after the idle timeout; a
    /// browser that answers the gateway's pings stays, with nothing else to say.
    @Test func aRelaySilentBothWaysIsClosedAndOneThatAnswersPingsStays() async throws {
        var limits = GatewayConfiguration.Limits()
        limits.idleTimeout = .seconds(1)
        try await GatewayFixture.with(limits: limits) { fixture in
            let silent = try fixture.relay(cookie: try await fixture.cookie())
            let answering = try fixture.relay(cookie: try await fixture.cookie())
            var pings = 0
            let until = ContinuousClock.now + .milliseconds(2500)
            while ContinuousClock.now < until {
                guard let frame = try? answering.readFrame(timeout: 100) else { continue }
                #expect(frame.opcode == 9, "the gateway sent opcode \(frame.opcode) to an idle browser")
                pings += 1
                try answering.sendFrame(opcode: 10, frame.payload)
            }
            #expect(pings >= 2, "the gateway pinged a quiet browser \(pings) times in 2.5 s")
            #expect(silent.closes(within: 1000), "a relay silent both ways for 2.5 s stayed open")
            #expect(!answering.closes(within: 200), "a browser that answered every ping was cut off")
            #expect(fixture.gateway.metrics.snapshot.cut[.idle] == 1)
        }
    }

    /// Issue 26, item 3: a browser that reads nothing while the desktop has plenty to send is
    /// cut off after the stall timeout, and counted; deskd holds at most the water mark for it.
    @Test func aBrowserThatReadsNothingIsCutOffAfterTheStallTimeout() async throws {
        var limits = GatewayConfiguration.Limits()
        limits.stallTimeout = .seconds(1)
        try await GatewayFixture.with(limits: limits) { fixture in
            let browser = try fixture.relay(cookie: try await fixture.cookie())
            try browser.sendFrame([3, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 1])   // asks the fake Xvnc for 8 MiB
            let metrics = fixture.gateway.metrics
            #expect(eventually { metrics.snapshot.cut[.notReading] == 1 }, "\(metrics.snapshot)")
            #expect(browser.closes(within: 2000))
            #expect(eventually { metrics.snapshot.relaysOpen == 0 })
        }
    }

    @Test func plainHTTPIsRefusedOffLoopback() throws {
        #expect(throws: GatewayError.self) { try GatewayConfiguration(host: "0.0.0.0").validate() }
        #expect(throws: GatewayError.self) { try GatewayConfiguration(host: "192.168.1.2", tlsCertificatePath: "/c.pem").validate() }
        try GatewayConfiguration(host: "127.0.0.1").validate()
        try GatewayConfiguration(host: "::1").validate()
        try GatewayConfiguration(host: "0.0.0.0", tlsCertificatePath: "/c.pem", tlsKeyPath: "/k.pem").validate()
        #expect(!GatewayConfiguration.isLoopback("127.0.0.1.example.org"))
        #expect(!GatewayConfiguration.isLoopback("128.0.0.1"))
    }
}
