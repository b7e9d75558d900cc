/// How two of deskd's parts on different hosts prove to each other that they hold one session's
/// key: deskd on the login node and that session's job on a compute node, and nobody else (not
/// another user on either host, who can open the same TCP ports). Both directions, before a byte
/// of anything else: the job reporting back where it listens (`report`) and the gateway relaying
/// a browser to the job's desktop (`relay`).
///
///     client → server   DESKHOP1 ROLE SESSION NONCE_C\n
///     server → client   NONCE_S MAC_S\n        MAC_S = HMAC(key, "server|ROLE|SESSION|NONCE_C|NONCE_S")
///     client → server   MAC_C\n                MAC_C = HMAC(key, "client|ROLE|SESSION|NONCE_C|NONCE_S")
///     server → client   OK\n
///
/// Fresh nonces on both sides make every code single-use; the side's name in each code keeps a
/// server's answer from being reflected back as a client's proof. The key is 32 random bytes made
/// per session, held by root on the login node (the session's record) and the job's owner (the
/// job's script), never on a command line. What follows the handshake is not encrypted: the relay
/// carries RFB, whose own VNC authentication (by the gateway) follows, as on one host.
///
/// This is the pure part: the lines and the transcripts. HMAC-SHA256 is supplied by the caller.
public enum HopHandshake {
    public static let magic = "DESKHOP1"
    public static let nonceBytes = 32
    public static let keyBytes = 32
    public static let macBytes = 32
    /// No line of the handshake is longer (the hello is the longest: about 120 bytes).
    public static let maxLineBytes = 256

    public enum Role: String, Sendable, CaseIterable {
        /// The job tells deskd where its desktop listens, then keeps the line open for events.
        case report
        /// The gateway asks the job for a byte stream to the desktop's Xvnc.
        case relay
    }

    public struct Hello: Sendable, Equatable {
        public var role: Role
        public var session: String
        public var nonce: [UInt8]

        public init(role: Role, session: String, nonce: [UInt8]) {
            self.role = role
            self.session = session
            self.nonce = nonce
        }

        public var line: String { "\(HopHandshake.magic) \(role.rawValue) \(session) \(HexBytes.encode(nonce))\n" }

        /// Parses the client's first line (without its newline); nil for anything else.
        public init?(line: some StringProtocol) {
            let parts = line.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0] == HopHandshake.magic, let role = Role(rawValue: String(parts[1])),
                  SessionSummary.isSessionID(String(parts[2])), let nonce = HexBytes.decode(parts[3], count: HopHandshake.nonceBytes)
            else { return nil }
            self.init(role: role, session: String(parts[2]), nonce: nonce)
        }
    }

    public struct Challenge: Sendable, Equatable {
        public var nonce: [UInt8]
        public var mac: [UInt8]

        public init(nonce: [UInt8], mac: [UInt8]) {
            self.nonce = nonce
            self.mac = mac
        }

        public var line: String { "\(HexBytes.encode(nonce)) \(HexBytes.encode(mac))\n" }

        public init?(line: some StringProtocol) {
            let parts = line.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 2, let nonce = HexBytes.decode(parts[0], count: HopHandshake.nonceBytes),
                  let mac = HexBytes.decode(parts[1], count: HopHandshake.macBytes) else { return nil }
            self.init(nonce: nonce, mac: mac)
        }
    }

    public static func proofLine(_ mac: [UInt8]) -> String { HexBytes.encode(mac) + "\n" }
    public static func proof(line: some StringProtocol) -> [UInt8]? { HexBytes.decode(line, count: macBytes) }
    public static let acceptedLine = "OK\n"

    public enum Side: String, Sendable { case server, client }

    /// What `side`'s code authenticates: everything both sides said, and who says it.
    public static func transcript(_ side: Side, hello: Hello, serverNonce: [UInt8]) -> [UInt8] {
        Array("\(side.rawValue)|\(hello.role.rawValue)|\(hello.session)|\(HexBytes.encode(hello.nonce))|\(HexBytes.encode(serverNonce))".utf8)
    }
}
