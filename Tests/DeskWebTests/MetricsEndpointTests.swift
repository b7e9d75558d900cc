import DeskLinux
import DeskFrontProtocol
import DeskWeb
import Foundation
import Testing
import TestSupport

/// `/metrics` on its own listener: the text for GET, a sentence for anything else, and a
/// client that never finishes its request is cut off.
@Suite struct MetricsEndpointTests {
    static func withEndpoint(_ body: (Int) async throws -> Void) async throws {
        let endpoint = MetricsEndpoint(logger: quietLogger) {
            "# TYPE deskd_sessions gauge\ndeskd_sessions{state=\"ready\"} 3\n"
        }
        // Bound as deskd binds it for its web front.
        let fd = try InternetSocketAddress.listen(host: "127.0.0.1", port: 0)
        let running = Task { try await endpoint.serve(listeningSocket: fd) }
        defer { running.cancel() }
        var port: Int?
        for _ in 0..<200 where port == nil {
            port = endpoint.port
            if port == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        try await withTaskExecutorPreference(DedicatedThreadExecutor.shared) { try await body(try #require(port)) }
        running.cancel()
        try await running.value
    }

    @Test func getMetricsAnswersInPrometheusTextFormat() async throws {
        try await Self.withEndpoint { port in
            let response = try RawClient(port: port).request("GET", "/metrics")
            #expect(response.status == 200)
            #expect(response.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect(response.text.contains("deskd_sessions{state=\"ready\"} 3"))
        }
    }

    @Test func otherPathsAndMethodsGetASentence() async throws {
        try await Self.withEndpoint { port in
            let other = try RawClient(port: port).request("GET", "/")
            #expect(other.status == 404 && other.text.contains("/metrics"))
            let post = try RawClient(port: port).request("POST", "/metrics", body: "x")
            #expect(post.status == 405)
            // The endpoint serves on after both.
            #expect(try RawClient(port: port).request("GET", "/metrics").status == 200)
        }
    }
}
