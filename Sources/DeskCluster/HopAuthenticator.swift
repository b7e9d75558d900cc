import CLibCrypto
import DeskCore
import Glibc

/// `HopHandshake` on a connected socket, blocking, within a deadline: the client (the side
/// that connected) and the server (the side that accepted). Either returns with the peer proven
/// to hold the session's key, or throws and sends nothing past the refusal: a peer without the
/// key learns only that it was refused.
public enum HopAuthenticator {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case timedOut
        case closed
        /// The peer spoke, wrongly: what was wrong, as a sentence's end.
        case refused(String)

        public var description: String {
            switch self {
            case .timedOut: "the other side did not complete the handshake in time"
            case .closed: "the other side closed the connection during the handshake"
            case .refused(let why): why
            }
        }
    }

    /// HMAC-SHA256 (RFC 2104), by libcrypto. Empty only if libcrypto failed, which no proof matches.
    static func mac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let done = key.withUnsafeBufferPointer { key in
            message.withUnsafeBufferPointer { message in
                code.withUnsafeMutableBufferPointer { code in
                    HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), message.baseAddress, message.count, code.baseAddress, &length)
                }
            }
        }
        guard done != nil, length == 32 else { return [] }
        return Array(code.prefix(32))
    }

    static func nonce() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<HopHandshake.nonceBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// A new session key: 32 random bytes, as hex.
    public static func newKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return HexBytes.encode((0..<HopHandshake.keyBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The connecting side: proves it holds `key` for `session` and checks that the server does.
    public static func client(fd: Int32, role: HopHandshake.Role, session: String, key: [UInt8],
                              deadline: ContinuousClock.Instant) throws(Failure) {
        let hello = HopHandshake.Hello(role: role, session: session, nonce: nonce())
        try send(hello.line, fd: fd, deadline: deadline)
        guard let challenge = HopHandshake.Challenge(line: try readLine(fd: fd, deadline: deadline)) else {
            throw .refused("the other side does not speak deskd's hop handshake")
        }
        let expected = mac(key: key, HopHandshake.transcript(.server, hello: hello, serverNonce: challenge.nonce))
        guard HexBytes.constantTimeEqual(expected, challenge.mac) else {
            throw .refused("the other side does not hold this session's key")
        }
        let proof = mac(key: key, HopHandshake.transcript(.client, hello: hello, serverNonce: challenge.nonce))
        try send(HopHandshake.proofLine(proof), fd: fd, deadline: deadline)
        guard try readLine(fd: fd, deadline: deadline) + "\n" == HopHandshake.acceptedLine else {
            throw .refused("the other side refused this side's proof")
        }
    }

    /// The accepting side: reads the client's hello, finds the key for the session and role it
    /// names (`key` returns nil for one it does not know), and accepts a client that proves it.
    /// Returns the hello, so the caller knows which session the connection is for.
    public static func server(fd: Int32, deadline: ContinuousClock.Instant,
                              key: (HopHandshake.Hello) -> [UInt8]?) throws(Failure) -> HopHandshake.Hello {
        guard let hello = HopHandshake.Hello(line: try readLine(fd: fd, deadline: deadline)) else {
            throw .refused("the client does not speak deskd's hop handshake")
        }
        guard let sessionKey = key(hello) else { throw .refused("the client named a session this side does not serve") }
        let serverNonce = nonce()
        let challenge = HopHandshake.Challenge(
            nonce: serverNonce, mac: mac(key: sessionKey, HopHandshake.transcript(.server, hello: hello, serverNonce: serverNonce)))
        try send(challenge.line, fd: fd, deadline: deadline)
        guard let proof = HopHandshake.proof(line: try readLine(fd: fd, deadline: deadline)) else {
            throw .refused("the client's proof is not a code")
        }
        let expected = mac(key: sessionKey, HopHandshake.transcript(.client, hello: hello, serverNonce: serverNonce))
        guard HexBytes.constantTimeEqual(expected, proof) else { throw .refused("the client does not hold the session's key") }
        try send(HopHandshake.acceptedLine, fd: fd, deadline: deadline)
        return hello
    }

    // MARK: Lines on a socket

    /// One line, read a byte at a time so that nothing after it (the desktop's RFB, say) is
    /// taken from the socket; without its newline.
    static func readLine(fd: Int32, deadline: ContinuousClock.Instant) throws(Failure) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
            if n == 1 {
                if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
                line.append(byte)
                guard line.count <= HopHandshake.maxLineBytes else { throw .refused("a handshake line is too long") }
                continue
            }
            if n == 0 { throw .closed }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { throw .closed }
            guard wait(fd, for: Int16(POLLIN), until: deadline) else { throw .timedOut }
        }
    }

    static func send(_ text: String, fd: Int32, deadline: ContinuousClock.Instant) throws(Failure) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { throw .closed }
            guard wait(fd, for: Int16(POLLOUT), until: deadline) else { throw .timedOut }
        }
    }

    static func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let milliseconds = max(1, Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var pfd = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&pfd, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            // poll's milliseconds are rounded down: on its timeout the deadline may be a moment away yet.
            if ready == 0 { continue }
            return ready == 1
        }
    }
}
