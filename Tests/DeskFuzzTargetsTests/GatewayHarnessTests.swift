@testable import DeskFuzzTargets
import Foundation
import Testing
import TestSupport

/// The gateway-http target is only worth its time if its connections reach what a browser's
/// do: these send the harness what noVNC sent (Fuzz/Corpus/gateway-http, real traffic with its
/// token and cookie rewritten to the harness's rules) and look at what the gateway answered.
@Suite struct GatewayHarnessTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus/gateway-http")

    /// A seed as the target reads it: its first byte plans the cut.
    func answer(_ seed: String, from peer: String = GatewayHarness.stranger) async throws -> String {
        let bytes = Array(try Data(contentsOf: Self.corpus.appendingPathComponent(seed)))
        return await answer(FuzzTargets.afterHeads(bytes.dropFirst()).flatMap { FuzzTargets.pieces($0, plan: bytes[0] & 0x7F) }, from: peer)
    }

    func answer(request: String, from peer: String = GatewayHarness.stranger) async -> String {
        await answer([Array(request.utf8)[...]], from: peer)
    }

    /// The harness blocks its caller, as libFuzzer's thread: here, a thread of its own.
    func answer(_ pieces: [ArraySlice<UInt8>], from peer: String) async -> String {
        await withTaskExecutorPreference(DedicatedThreadExecutor.shared) {
            String(decoding: GatewayHarness.shared.serve(pieces, from: peer), as: UTF8.self)
        }
    }

    @Test func aLinksPageAndItsTokenExchangeAreServed() async throws {
        let sent = try await answer("novnc-open-exchange")
        #expect(sent.hasPrefix("HTTP/1.1 200 OK"))
        #expect(sent.contains("Set-Cookie: deskd_gateway=ctJZgBcLFReZCV5pvCeG5ysmZnsq3hX5z_EkO1ngE-k;"))
        #expect(sent.contains("{\"viewOnly\":false}"))
        // /open, /open.js, the exchange, vnc.html, and 11 of noVNC's files that are not in the
        // harness's directory.
        #expect(sent.components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1 == 4)
        #expect(sent.components(separatedBy: "HTTP/1.1 404 Not Found\r\n").count - 1 == 11)
    }

    @Test func theWebSocketIsUpgradedAndItsFramesRead() async throws {
        // Cut after the upgrade's head and in pieces of up to 127 bytes (its plan): the browser's
        // frames come after the gateway's greeting, as noVNC's did.
        let sent = try await answer("novnc-websockify")
        #expect(sent.hasPrefix("HTTP/1.1 101 Switching Protocols"))
        // The harness has no desktop: the gateway greets the browser, reads its version, and says so in RFB.
        #expect(sent.contains("RFB 003.008\n"))
        #expect(sent.contains("The desktop could not be reached"))
    }

    @Test func thePortalsLoginIsAnswered() async throws {
        let sent = try await answer("portal-login-wrong-password")
        #expect(sent.contains("The name or the password is wrong."))
    }

    @Test func nothingOutsideNoVNCsDirectoryIsServed() async {
        for path in ["/link.html", "/../secret.html", "/%2e%2e/secret.html", "/..%2fsecret.html"] {
            let sent = await answer(request: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
            #expect(sent.hasPrefix("HTTP/1.1 404"), "\(path): \(sent.prefix(40))")
            #expect(!sent.contains("deskd-fuzz: this file is outside"))
        }
        #expect(await answer(request: "GET /vnc.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").hasPrefix("HTTP/1.1 200 OK"))
    }

    @Test func aUserNamedByAnyoneButTheProxyIsRefused() async {
        let request = "GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Remote-User: alice\r\n\r\n"
        #expect(await answer(request: request, from: GatewayHarness.stranger).hasPrefix("HTTP/1.1 403"))
        #expect(await answer(request: request, from: GatewayHarness.proxy).hasPrefix("HTTP/1.1 200 OK"))
    }
}
