import DeskGateway
import Foundation
import Glibc
import Testing
import TestSupport

/// The gateway with a certificate: TLS on the one port, and https:// as the only origin it
/// takes. A throwaway certificate from openssl(1), a client from curl(1).
extension GatewayTests {
@Suite(.enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/openssl") && FileManager.default.fileExists(atPath: "/usr/bin/curl")))
struct TLSTests {
    static func output(_ path: String, _ arguments: [String]) throws -> String {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func theGatewayServesTLSWithItsCertificateAndTakesOnlyAnHTTPSOrigin() async throws {
        // curl blocks: on a thread of its own, not one the gateway's authority calls need.
        try await withTaskExecutorPreference(DedicatedThreadExecutor.shared) {
        let scratch = try Scratch()
        _ = scratch.directory("novnc")
        scratch.file("novnc/vnc.html", "<title>noVNC</title>\n")
        let certificate = scratch.path + "/cert.pem", key = scratch.path + "/key.pem"
        _ = try Self.output("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                 "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=127.0.0.1"])
        let authority = FakeAuthority(endpoint: scratch.path + "/rfb.sock", password: "secret12")
        let configuration = GatewayConfiguration(host: "127.0.0.1", port: 0, tlsCertificatePath: certificate, tlsKeyPath: key,
                                                 novncDirectory: scratch.path + "/novnc")
        let gateway = Gateway(configuration: configuration, authority: authority, logger: quietLogger)
        let running = Task { try await gateway.run() }
        defer { running.cancel() }
        let port = try await gateway.port()
        let base = "https://127.0.0.1:\(port)"

        let page = try Self.output("/usr/bin/curl", ["-sk", "--max-time", "5", base + "/vnc.html"])
        #expect(page.contains("noVNC"))

        let token = await authority.mint(viewOnly: false)
        let http = try Self.output("/usr/bin/curl", ["-sk", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                                                     "-H", "Origin: http://127.0.0.1:\(port)", "--data", token, base + "/exchange"])
        #expect(http == "403")
        let https = try Self.output("/usr/bin/curl", ["-sk", "--max-time", "5", "-D", "-", "-X", "POST",
                                                      "-H", "Origin: \(base)", "--data", token, base + "/exchange"])
        #expect(https.hasPrefix("HTTP/1.1 200"))
        #expect(https.lowercased().contains("set-cookie: deskd_gateway="))

        // Plain HTTP on the TLS port gets no page.
        let plain = try Self.output("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/vnc.html"])
        #expect(!plain.contains("noVNC"))
        }
    }

    @Test func anUnreadableCertificateStopsTheGatewayWithASentence() async throws {
        let configuration = GatewayConfiguration(host: "0.0.0.0", port: 0, tlsCertificatePath: "/nonexistent/cert.pem", tlsKeyPath: "/nonexistent/key.pem")
        let gateway = Gateway(configuration: configuration, authority: FakeAuthority(endpoint: "/x", password: "x"), logger: quietLogger)
        await #expect {
            try await gateway.run()
        } throws: { error in
            guard let error = error as? GatewayError else { return false }
            return error.code == .tlsUnreadable && error.description.contains("/nonexistent/cert.pem")
        }
        let plain = Gateway(configuration: GatewayConfiguration(host: "0.0.0.0", port: 0), authority: FakeAuthority(endpoint: "/x", password: "x"), logger: quietLogger)
        await #expect(throws: GatewayError.self) { try await plain.run() }
        await #expect(throws: GatewayError.self) { try await plain.port() }
    }
}
}
