@testable import DeskCluster
import DeskCore
import Foundation
import Glibc
import Testing

/// The hop's handshake over a real socket pair, as deskd and a job speak it across two hosts: one
/// side on a thread of its own, the other on the test's; or one side driven by hand, line by line,
/// to be a peer that does what the real one never would.
@Suite struct HopAuthenticatorTests {
    typealias Failure = HopAuthenticator.Failure
    typealias Hello = HopHandshake.Hello

    /// libcrypto's HMAC-SHA256 is RFC 4231's: its test cases 1, 2 and 6 (a key longer than a block).
    @Test func theMacIsRFC4231sHMACSHA256() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(HopAuthenticator.mac(key: [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(hex(HopAuthenticator.mac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(hex(HopAuthenticator.mac(key: [UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    static let session = "0123456789abcdef0123456789abcdef"
    static let key = [UInt8](repeating: 0x11, count: 32)
    static let otherKey = [UInt8](repeating: 0x22, count: 32)

    static func soon(_ duration: Duration = .seconds(10)) -> ContinuousClock.Instant { .now + duration }

    /// A connected pair: the client's end and the server's.
    static func pair() throws -> (client: Int32, server: Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    /// The client's side; nil when it succeeds.
    static func client(_ fd: Int32, role: HopHandshake.Role = .report, session: String = session, key: [UInt8] = key,
                       deadline: ContinuousClock.Instant = soon()) -> Failure? {
        do throws(Failure) {
            try HopAuthenticator.client(fd: fd, role: role, session: session, key: key, deadline: deadline)
            return nil
        } catch { return error }
    }

    static func server(_ fd: Int32, deadline: ContinuousClock.Instant = soon(),
                       key: (Hello) -> [UInt8]? = { _ in HopAuthenticatorTests.key }) -> Result<Hello, Failure> {
        do throws(Failure) { return .success(try HopAuthenticator.server(fd: fd, deadline: deadline, key: key)) } catch { return .failure(error) }
    }

    static func readLine(_ fd: Int32, deadline: ContinuousClock.Instant = soon()) -> Result<String, Failure> {
        do throws(Failure) { return .success(try HopAuthenticator.readLine(fd: fd, deadline: deadline)) } catch { return .failure(error) }
    }

    /// Writes all of `text` at once (a socket pair's buffer holds far more than a handshake).
    static func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #expect(sent == bytes.count)
    }

    /// Everything the peer sends until it closes its end or the deadline passes.
    static func drain(_ fd: Int32, deadline: ContinuousClock.Instant = soon()) -> (text: String, closed: Bool) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { bytes += buffer[..<n]; continue }
            if n == 0 { return (String(decoding: bytes, as: UTF8.self), true) }
            guard errno == EAGAIN || errno == EINTR else { return (String(decoding: bytes, as: UTF8.self), true) }
            guard HopAuthenticator.wait(fd, for: Int16(POLLIN), until: deadline) else { return (String(decoding: bytes, as: UTF8.self), false) }
        }
    }

    static func mac(_ key: [UInt8], _ side: HopHandshake.Side, _ hello: Hello, _ serverNonce: [UInt8]) -> [UInt8] {
        HopAuthenticator.mac(key: key, HopHandshake.transcript(side, hello: hello, serverNonce: serverNonce))
    }

    // MARK: Both sides real

    @Test(arguments: HopHandshake.Role.allCases)
    func bothSidesWithTheKeyAgree(role: HopHandshake.Role) throws {
        let (c, s) = try Self.pair()
        defer { close(s) }
        let client = OnThread { defer { close(c) }; return Self.client(c, role: role) }
        var asked: [Hello] = []
        let result = Self.server(s) { hello in
            asked.append(hello)
            return hello.session == Self.session ? Self.key : nil
        }
        #expect(client.value() == nil)
        let hello = try result.get()
        #expect(hello.role == role)
        #expect(hello.session == Self.session)
        #expect(hello.nonce.count == 32)
        #expect(asked == [hello])
        // Nothing more was said: the client's end closes after the handshake, with no byte left unread.
        #expect(Self.drain(s) == ("", true))
    }

    @Test func aClientWithAnotherKeyRefusesTheServerAndTheServerHearsNoProof() throws {
        let (c, s) = try Self.pair()
        defer { close(s) }
        let client = OnThread { defer { close(c) }; return Self.client(c, key: Self.otherKey) }
        // The client, holding another key, cannot check the server's code: it refuses first, and the
        // server sees the connection end where a proof would have been.
        #expect(Self.server(s) == .failure(.closed))
        #expect(client.value() == .refused("the other side does not hold this session's key"))
    }

    @Test func theServerRefusesAClientWithAnotherKey() throws {
        // By hand, a client that carries on past the server's code it cannot check: the server refuses its proof.
        let (c, s) = try Self.pair()
        defer { close(c) }
        let server = OnThread { defer { close(s) }; return Self.server(s) }
        let hello = Hello(role: .report, session: Self.session, nonce: [UInt8](repeating: 7, count: 32))
        Self.write(c, hello.line)
        let challenge = try #require(HopHandshake.Challenge(line: Self.readLine(c).get()))
        #expect(challenge.mac == Self.mac(Self.key, .server, hello, challenge.nonce))
        Self.write(c, HopHandshake.proofLine(Self.mac(Self.otherKey, .client, hello, challenge.nonce)))
        #expect(server.value() == .failure(.refused("the client does not hold the session's key")))
        #expect(Self.drain(c) == ("", true), "no OK, nothing past the refusal")
    }

    /// Proofs a client without the key could make from what it saw: each refused, and nothing sent after.
    @Test(arguments: ["reflected", "client code for another nonce", "client code for another role", "server code", "not a code", "empty"])
    func theServerRefusesEveryProofButTheOne(kind: String) throws {
        let (c, s) = try Self.pair()
        defer { close(c) }
        let server = OnThread { defer { close(s) }; return Self.server(s) }
        let hello = Hello(role: .report, session: Self.session, nonce: [UInt8](repeating: 7, count: 32))
        Self.write(c, hello.line)
        let challenge = try #require(HopHandshake.Challenge(line: Self.readLine(c).get()))
        let proof = switch kind {
        case "reflected": HopHandshake.proofLine(challenge.mac)
        case "client code for another nonce": HopHandshake.proofLine(Self.mac(Self.key, .client, hello, [UInt8](repeating: 1, count: 32)))
        case "client code for another role":
            HopHandshake.proofLine(Self.mac(Self.key, .client, Hello(role: .relay, session: Self.session, nonce: hello.nonce), challenge.nonce))
        case "server code": HopHandshake.proofLine(Self.mac(Self.key, .server, hello, challenge.nonce))
        case "not a code": "OK\n"
        default: "\n"
        }
        let sentence = kind == "not a code" || kind == "empty" ? "the client's proof is not a code" : "the client does not hold the session's key"
        Self.write(c, proof)
        #expect(server.value() == .failure(.refused(sentence)))
        #expect(Self.drain(c) == ("", true))
        // The one proof it takes, for comparison: the client's code for this hello and this challenge.
        #expect(Self.mac(Self.key, .client, hello, challenge.nonce) != HexBytes.decode(proof.dropLast(), count: 32))
    }

    @Test func theClientRefusesAServerWithAnotherKeyAndSendsNoProof() throws {
        let (c, s) = try Self.pair()
        defer { close(s) }
        let client = OnThread { defer { close(c) }; return Self.client(c) }
        let hello = try #require(Hello(line: Self.readLine(s).get()))
        let serverNonce = [UInt8](repeating: 9, count: 32)
        Self.write(s, HopHandshake.Challenge(nonce: serverNonce, mac: Self.mac(Self.otherKey, .server, hello, serverNonce)).line)
        #expect(client.value() == .refused("the other side does not hold this session's key"))
        #expect(Self.drain(s) == ("", true), "the client sent no proof line, nor anything else")
    }

    @Test func theClientRefusesAServerThatDoesNotSpeakTheHandshake() throws {
        for answer in ["RFB 003.008\n", "\n", HopHandshake.acceptedLine, String(repeating: "ab", count: 32) + "\n"] {
            let (c, s) = try Self.pair()
            defer { close(s) }
            let client = OnThread { defer { close(c) }; return Self.client(c) }
            #expect(Hello(line: try Self.readLine(s).get()) != nil)
            Self.write(s, answer)
            #expect(client.value() == .refused("the other side does not speak deskd's hop handshake"))
            #expect(Self.drain(s) == ("", true))
        }
    }

    @Test func theClientRefusesAServerThatDoesNotAcceptItsProof() throws {
        let answers: [(String, Failure)] = [
            ("NO\n", .refused("the other side refused this side's proof")), ("OK \n", .refused("the other side refused this side's proof")),
            ("", .closed),
        ]
        for (answer, failure) in answers {
            let (c, s) = try Self.pair()
            let client = OnThread { defer { close(c) }; return Self.client(c) }
            let hello = try #require(Hello(line: Self.readLine(s).get()))
            let serverNonce = [UInt8](repeating: 9, count: 32)
            Self.write(s, HopHandshake.Challenge(nonce: serverNonce, mac: Self.mac(Self.key, .server, hello, serverNonce)).line)
            #expect(HopHandshake.proof(line: try Self.readLine(s).get()) == Self.mac(Self.key, .client, hello, serverNonce))
            if answer.isEmpty { close(s) } else { Self.write(s, answer) }
            #expect(client.value() == failure)
            if !answer.isEmpty { close(s) }
        }
    }

    // MARK: What the server serves

    @Test func aSessionTheServerDoesNotKnowIsRefused() throws {
        let (c, s) = try Self.pair()
        let client = OnThread { defer { close(c) }; return Self.client(c, session: "fedcba9876543210fedcba9876543210") }
        var asked: [String] = []
        let result = Self.server(s) { hello in
            asked.append(hello.session)
            return nil
        }
        close(s)
        #expect(result == .failure(.refused("the client named a session this side does not serve")))
        #expect(asked == ["fedcba9876543210fedcba9876543210"])
        // No challenge reached the client: only the end of the connection.
        #expect(client.value() == .closed)
    }

    @Test func aServerForRelaysRefusesAReport() throws {
        for role in HopHandshake.Role.allCases {
            let (c, s) = try Self.pair()
            let client = OnThread { defer { close(c) }; return Self.client(c, role: role) }
            var roles: [HopHandshake.Role] = []
            let result = Self.server(s) { hello in
                roles.append(hello.role)
                return hello.role == .relay ? Self.key : nil
            }
            close(s)
            #expect(roles == [role])
            if role == .relay {
                #expect(try result.get().role == .relay)
                #expect(client.value() == nil)
            } else {
                #expect(result == .failure(.refused("the client named a session this side does not serve")))
                #expect(client.value() == .closed)
            }
        }
    }

    @Test func theServerRefusesAHelloThatIsNotOneWithoutAskingForAKey() throws {
        for line in ["GET / HTTP/1.1\n", "DESKHOP1 report \(Self.session)\n", "\n", "RFB 003.008\n"] {
            let (c, s) = try Self.pair()
            defer { close(c) }
            Self.write(c, line)
            var asked = 0
            #expect(Self.server(s) { _ in asked += 1; return Self.key } == .failure(.refused("the client does not speak deskd's hop handshake")))
            close(s)
            #expect(asked == 0)
            #expect(Self.drain(c) == ("", true))
        }
    }

    // MARK: Time, ends and lengths

    @Test func aSilentServerTimesOutTheClient() throws {
        let (c, s) = try Self.pair()
        defer { close(c); close(s) }
        let start = ContinuousClock.now
        #expect(Self.client(c, deadline: start + .milliseconds(200)) == .timedOut)
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(200))
        #expect(elapsed < .seconds(2))
    }

    @Test(arguments: ["", "DESKHOP1 report"])
    func aSilentClientTimesOutTheServer(partial: String) throws {
        let (c, s) = try Self.pair()
        defer { close(c); close(s) }
        if !partial.isEmpty { Self.write(c, partial) }
        let start = ContinuousClock.now
        #expect(Self.server(s, deadline: start + .milliseconds(200)) == .failure(.timedOut))
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(200))
        #expect(elapsed < .seconds(2))
    }

    @Test func aServerThatNeverSaysOKTimesOutTheClient() throws {
        let (c, s) = try Self.pair()
        defer { close(s) }
        let start = ContinuousClock.now
        let client = OnThread { defer { close(c) }; return Self.client(c, deadline: start + .milliseconds(200)) }
        let hello = try #require(Hello(line: Self.readLine(s).get()))
        let serverNonce = [UInt8](repeating: 9, count: 32)
        Self.write(s, HopHandshake.Challenge(nonce: serverNonce, mac: Self.mac(Self.key, .server, hello, serverNonce)).line)
        #expect(client.value() == .timedOut)
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func aPeerThatClosesEndsTheHandshake() throws {
        do {
            let (c, s) = try Self.pair()
            close(c)
            #expect(Self.server(s) == .failure(.closed))
            close(s)
        }
        do {
            let (c, s) = try Self.pair()
            close(s)
            #expect(Self.client(c) == .closed)
            close(c)
        }
        do {
            let (c, s) = try Self.pair()
            Self.write(c, "DESKHOP1 rep")
            close(c)
            #expect(Self.server(s) == .failure(.closed))
            close(s)
        }
    }

    @Test func whatTheServerSendsAfterOKIsTheClientsToRead() throws {
        // The real server, then the desktop's RFB greeting right behind its OK.
        do {
            let (c, s) = try Self.pair()
            let client = OnThread { () -> Result<String, Failure> in
                defer { close(c) }
                if let failure = Self.client(c, role: .relay) { return .failure(failure) }
                return Self.readLine(c)
            }
            _ = try Self.server(s).get()
            Self.write(s, "RFB 003.008\n")
            #expect(client.value() == .success("RFB 003.008"))
            close(s)
        }
        // By hand: OK and the greeting in one write, so both wait in the client's socket together.
        do {
            let (c, s) = try Self.pair()
            let client = OnThread { () -> (Failure?, String, Bool) in
                defer { close(c) }
                let failure = Self.client(c, role: .relay)
                let rest = Self.drain(c)
                return (failure, rest.text, rest.closed)
            }
            let hello = try #require(Hello(line: Self.readLine(s).get()))
            let serverNonce = [UInt8](repeating: 9, count: 32)
            Self.write(s, HopHandshake.Challenge(nonce: serverNonce, mac: Self.mac(Self.key, .server, hello, serverNonce)).line)
            #expect(HopHandshake.proof(line: try Self.readLine(s).get()) == Self.mac(Self.key, .client, hello, serverNonce))
            Self.write(s, "OK\nRFB 003.008\n")
            close(s)
            let (failure, rest, closed) = client.value()
            #expect(failure == nil)
            #expect(rest == "RFB 003.008\n")
            #expect(closed)
        }
    }

    @Test func whatTheClientSendsAfterItsProofIsTheServersToRead() throws {
        let (c, s) = try Self.pair()
        defer { close(c) }
        let server = OnThread { () -> (Result<Hello, Failure>, Result<String, Failure>) in
            defer { close(s) }
            let result = Self.server(s)
            return (result, Self.readLine(s))
        }
        let hello = Hello(role: .report, session: Self.session, nonce: [UInt8](repeating: 7, count: 32))
        Self.write(c, hello.line)
        let challenge = try #require(HopHandshake.Challenge(line: Self.readLine(c).get()))
        Self.write(c, HopHandshake.proofLine(Self.mac(Self.key, .client, hello, challenge.nonce)) + #"{"event":"viewers","viewers":1}"# + "\n")
        let (result, next) = server.value()
        #expect(result == .success(hello))
        #expect(next == .success(#"{"event":"viewers","viewers":1}"#))
        #expect(Self.drain(c) == (HopHandshake.acceptedLine, true))
    }

    @Test func aLineOverMaxLineBytesIsRefused() throws {
        #expect(HopHandshake.maxLineBytes == 256)
        for (line, sentence) in [
            (String(repeating: "A", count: 300) + "\n", "a handshake line is too long"),
            (String(repeating: "A", count: 257), "a handshake line is too long"),  // refused before any newline comes
            ("DESKHOP1 report \(Self.session) " + String(repeating: "0", count: 1000) + "\n", "a handshake line is too long"),
            (String(repeating: "A", count: 256) + "\n", "the client does not speak deskd's hop handshake"),
        ] {
            let (c, s) = try Self.pair()
            defer { close(c) }
            Self.write(c, line)
            #expect(Self.server(s) == .failure(.refused(sentence)))
            close(s)
        }
        // And the client, from a server that goes on and on.
        let (c, s) = try Self.pair()
        defer { close(s) }
        let client = OnThread { defer { close(c) }; return Self.client(c) }
        _ = try Self.readLine(s).get()
        Self.write(s, String(repeating: "e", count: 4096))
        #expect(client.value() == .refused("a handshake line is too long"))
        #expect(Self.drain(s) == ("", true))
    }

    // MARK: The pieces

    /// RFC 4231, test cases 1 and 2.
    @Test func theCodeIsHMACSHA256() {
        #expect(HopAuthenticator.mac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
            == HexBytes.decode("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", count: 32))
        #expect(HopAuthenticator.mac(key: [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8))
            == HexBytes.decode("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", count: 32))
    }

    @Test func keysAndNoncesAreFreshRandomBytes() {
        let key = HopAuthenticator.newKey()
        #expect(HexBytes.decode(key, count: HopHandshake.keyBytes) != nil)
        #expect(key != HopAuthenticator.newKey())
        #expect(HopAuthenticator.nonce().count == HopHandshake.nonceBytes)
        #expect(HopAuthenticator.nonce() != HopAuthenticator.nonce())
    }

    @Test func failuresSaySo() {
        #expect(Failure.timedOut.description == "the other side did not complete the handshake in time")
        #expect(Failure.closed.description == "the other side closed the connection during the handshake")
        #expect(Failure.refused("a handshake line is too long").description == "a handshake line is too long")
    }
}

/// `body` on a thread of its own, so that a blocking side does not hold one of the test pool's;
/// `value()` waits for it.
final class OnThread<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: T?

    init(_ body: @escaping @Sendable () -> T) {
        let thread = Thread { [self] in
            result = body()
            done.signal()
        }
        thread.start()
    }

    func value() -> T {
        done.wait()
        done.signal()
        return result!
    }
}
