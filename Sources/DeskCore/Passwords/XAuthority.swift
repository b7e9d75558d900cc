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
        Self.fileContents(of: [entry(for: display)])
    }

    /// This cookie's entry for `display`.
    public func entry(for display: Display) -> Entry {
        Entry(family: Self.familyWild, address: [], number: Array(String(display.number).utf8),
              name: Array(Self.protocolName.utf8), data: cookie)
    }

    /// One entry of an Xauthority file. deskd writes the file and never reads one back: the
    /// reader is for what does read it (Xvnc's libXau, and every X client of the desktop's
    /// owner, who may rewrite the file), so the tests and the fuzzer can hold the format to it.
    public struct Entry: Sendable, Equatable {
        public var family: UInt16
        public var address: [UInt8]
        /// The display number, as text.
        public var number: [UInt8]
        public var name: [UInt8]
        public var data: [UInt8]

        public init(family: UInt16, address: [UInt8], number: [UInt8], name: [UInt8], data: [UInt8]) {
            self.family = family
            self.address = address
            self.number = number
            self.name = name
            self.data = data
        }
    }

    /// The file holding `entries`, one after another (a field longer than 65,535 bytes is cut
    /// there, as libXau's 16-bit lengths cut it).
    public static func fileContents(of entries: [Entry]) -> [UInt8] {
        var bytes: [UInt8] = []
        func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        func counted(_ field: [UInt8]) {
            let kept = field.prefix(Int(UInt16.max))
            u16(UInt16(kept.count))
            bytes += kept
        }
        for entry in entries {
            u16(entry.family)
            counted(entry.address)
            counted(entry.number)
            counted(entry.name)
            counted(entry.data)
        }
        return bytes
    }

    /// The entries of an Xauthority file, read as libXau's XauReadAuth reads them, entry after
    /// entry to the end; nil if the file ends inside an entry.
    public static func entries(in bytes: [UInt8]) -> [Entry]? {
        var at = 0
        func u16() -> UInt16? {
            guard bytes.count - at >= 2 else { return nil }
            defer { at += 2 }
            return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
        }
        func counted() -> [UInt8]? {
            guard let length = u16().map(Int.init), bytes.count - at >= length else { return nil }
            defer { at += length }
            return Array(bytes[at..<at + length])
        }
        var entries: [Entry] = []
        while at < bytes.count {
            guard let family = u16(), let address = counted(), let number = counted(), let name = counted(), let data = counted() else { return nil }
            entries.append(Entry(family: family, address: address, number: number, name: name, data: data))
        }
        return entries
    }

    /// The hex form `xauth list` prints.
    public var hex: String {
        cookie.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
        }.joined()
    }
}
