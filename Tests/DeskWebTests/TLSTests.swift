import DeskCore
import DeskFrontProtocol
import DeskWeb
import DeskLinux
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
        let running = Task { try await gateway.serveOnLoopback() }
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

    /// openssl(1) as a client, run to completion: its exit status and everything it printed.
    static func run(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A TLS gateway on a throwaway EC certificate, for `body` to shake hands with.
    static func withTLSGateway(_ adjust: (inout GatewayConfiguration) -> Void = { _ in }, _ body: (Int) throws -> Void) async throws {
        try await withTaskExecutorPreference(DedicatedThreadExecutor.shared) {
            let scratch = try Scratch()
            let certificate = scratch.path + "/cert.pem", key = scratch.path + "/key.pem"
            _ = try Self.output("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                     "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=127.0.0.1"])
            var configuration = GatewayConfiguration(host: "127.0.0.1", port: 0, tlsCertificatePath: certificate, tlsKeyPath: key,
                                                     novncDirectory: scratch.path)
            adjust(&configuration)
            let gateway = Gateway(configuration: configuration, authority: FakeAuthority(endpoint: "/x", password: "x"), logger: quietLogger)
            let running = Task { try await gateway.serveOnLoopback() }
            defer { running.cancel() }
            try body(try await gateway.port())
        }
    }

    /// What `openssl s_client` agreed with the gateway: the protocol and cipher, or nil when the
    /// handshake failed. Debian's openssl refuses TLS 1.0 and 1.1 itself at its default security
    /// level, so the old protocols are offered at level 0: the refusal must be the gateway's.
    static func handshake(port: Int, _ options: [String]) throws -> (protocol: String, cipher: String)? {
        let (status, output) = try run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-brief"] + options)
        func field(_ name: String) -> String? {
            output.split(separator: "\n").first { $0.hasPrefix(name + ":") }.map { $0.dropFirst(name.count + 1).trimming() }
        }
        guard status == 0, let version = field("Protocol version"), let cipher = field("Ciphersuite") else { return nil }
        return (version, cipher)
    }

    static let modernTLS12Ciphers: Set = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"]

    @Test func tls10And11AndCiphersWithoutAEADAreRefused() async throws {
        try await Self.withTLSGateway { port in
            let oldest = "DEFAULT@SECLEVEL=0"
            let tls11 = try Self.handshake(port: port, ["-tls1_1", "-cipher", oldest])
            #expect(tls11 == nil, "a TLS 1.1 handshake completed: \(String(describing: tls11))")
            let tls10 = try Self.handshake(port: port, ["-tls1", "-cipher", oldest])
            #expect(tls10 == nil, "a TLS 1.0 handshake completed: \(String(describing: tls10))")
            // TLS 1.2 only with ECDHE and an AEAD: CBC suites, even with ECDHE, are gone.
            let cbc = try Self.handshake(port: port, ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384:@SECLEVEL=0"])
            #expect(cbc == nil, "a TLS 1.2 handshake with a CBC cipher completed: \(String(describing: cbc))")
            let tls12 = try #require(try Self.handshake(port: port, ["-tls1_2"]), "no TLS 1.2 handshake")
            #expect(tls12.protocol == "TLSv1.2" && Self.modernTLS12Ciphers.contains(tls12.cipher), "\(tls12)")
            let tls13 = try #require(try Self.handshake(port: port, ["-tls1_3"]), "no TLS 1.3 handshake")
            #expect(tls13.protocol == "TLSv1.3", "\(tls13)")
        }
    }

    @Test func tlsMinimum13RefusesTLS12() async throws {
        try await Self.withTLSGateway({ $0.tlsMinimum = .tls13 }) { port in
            let tls12 = try Self.handshake(port: port, ["-tls1_2"])
            #expect(tls12 == nil, "a TLS 1.2 handshake completed: \(String(describing: tls12))")
            let tls13 = try #require(try Self.handshake(port: port, ["-tls1_3"]), "no TLS 1.3 handshake")
            #expect(tls13.protocol == "TLSv1.3", "\(tls13)")
        }
    }

    /// TLS material deskd handed over that makes no certificate and key: the gateway does not
    /// serve, says which files in a sentence, and closes the socket it was given.
    @Test func materialThatIsNoCertificateStopsTheGatewayWithASentence() async throws {
        let configuration = GatewayConfiguration(host: "127.0.0.1", port: 0, tlsCertificatePath: "/etc/deskd/cert.pem", tlsKeyPath: "/etc/deskd/key.pem")
        let gateway = Gateway(configuration: configuration, authority: FakeAuthority(endpoint: "/x", password: "x"), logger: quietLogger)
        let fd = try InternetSocketAddress.listen(host: "127.0.0.1", port: 0)
        let material = TLSMaterial(certificatePath: "/etc/deskd/cert.pem", keyPath: "/etc/deskd/key.pem", certificatePEM: "not a certificate\n", keyPEM: "nor a key\n")
        await #expect {
            try await gateway.serve(listeningSocket: fd, tls: material)
        } throws: { error in
            guard let error = error as? GatewayError else { return false }
            return error.code == .tlsUnreadable && error.description.contains("/etc/deskd/cert.pem")
        }
        #expect(fcntl(fd, F_GETFD) == -1, "the gateway kept the socket it could not serve")
        await #expect(throws: GatewayError.self) { try await gateway.port() }
    }

    /// Plain HTTP beyond loopback, or half a certificate, is refused before anything listens.
    @Test func aConfigurationTheGatewayMustNotRunWithIsRefused() {
        #expect(throws: GatewayError.self) { try GatewayConfiguration(host: "0.0.0.0", port: 0).validate() }
        #expect(throws: GatewayError.self) { try GatewayConfiguration(host: "127.0.0.1", port: 0, tlsCertificatePath: "/c.pem").validate() }
        #expect(throws: Never.self) { try GatewayConfiguration(host: "127.0.0.1", port: 0).validate() }
    }
}
}
