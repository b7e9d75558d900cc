/// A session's X authority: one MIT-MAGIC-COOKIE-1 that Xvnc demands of every X client.
///
/// Without `-auth`, an X server lets every local user in (any user could screenshot or type
/// into another's desktop). Xvnc is started with `-auth` on a file holding this cookie, and the
/// desktop finds the same file through `XAUTHORITY`; the file is the owner's, mode 0600.
public struct XAuthority: Sendable, Equatable {
    /// The 16 secret bytes. Whoever holds them may open the display.
    public let cookie: [UInt8]

    public static let protocolName = "MIT-MAGIC-COOKIE-1"
    public static let cookieLength = 16

    public init(cookie: [UInt8]) {
        precondition(cookie.count == Self.cookieLength, "an MIT-MAGIC-COOKIE-1 is 16 bytes")
        self.cookie = cookie
    }

    /// A fresh cookie from `generator`; the daemon passes the system CSPRNG (getrandom).
    public static func generate<G: RandomNumberGenerator>(using generator: inout G) -> XAuthority {
        XAuthority(cookie: (0..<cookieLength).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    public static func generate() -> XAuthority {
        var system = SystemRandomNumberGenerator()
        return generate(using: &system)
    }

    /// FamilyWild: the entry matches the display over every transport (the /tmp/.X11-unix socket,
    /// the abstract one, TCP), whatever the host's name is or becomes.
    static let familyWild: UInt16 = 0xFFFF

    /// The Xauthority file for `display`, in libXau's format: family, address, display number,
    /// protocol name and data, each string prefixed by its big-endian 16-bit length
    /// (what `xauth -f FILE add :N MIT-MAGIC-COOKIE-1 HEX` writes, with a wildcard address).
    public func fileContents(for display: Display) -> [UInt8] {
        var bytes: [UInt8] = []
        func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        func counted(_ field: [UInt8]) { u16(UInt16(field.count)); bytes += field }
        u16(Self.familyWild)
        counted([])
        counted(Array(String(display.number).utf8))
        counted(Array(Self.protocolName.utf8))
        counted(cookie)
        return bytes
    }

    /// The hex form `xauth list` prints.
    public var hex: String {
        cookie.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
        }.joined()
    }
}
