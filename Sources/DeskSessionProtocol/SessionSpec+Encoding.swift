import Glibc

extension SessionSpec {
    /// The bytes deskd writes: each key and value ended by a NUL, then `start` and its NUL.
    /// Refused if a value holds a NUL, which would end its field early and make the rest a key
    /// of its own, or is longer than deskd-session reads.
    public func encoded() throws(Failure) -> [UInt8] {
        var fields: [(Key, String)] = [
            (.user, user), (.uid, String(uid)), (.gid, String(gid)), (.home, home), (.display, display), (.sessionID, sessionID),
            (.logDirectory, logDirectory), (.logLimit, String(logLimit)), (.journal, journal ? "1" : "0"),
            (.serverUmask, String(serverUmask, radix: 8)),
        ]
        if let cgroup { fields.append((.cgroup, cgroup)) }
        // Only when it is not X's, so a spec of an X desktop reads as before.
        if sessionType != "x11" { fields.append((.sessionType, sessionType)) }
        if let xSocketDirectory { fields.append((.xSocketDirectory, xSocketDirectory)) }
        fields += server.map { (.server, $0) } + desktop.map { (.desktop, $0) } + environment.map { (.environment, $0) }
        var bytes: [UInt8] = []
        for (key, value) in fields {
            guard !value.utf8.contains(0) else { throw .bad("a NUL in a value of \(key.rawValue)") }
            guard value.utf8.count <= Self.fieldLimit else { throw Failure.overlong }
            bytes += Array(key.rawValue.utf8) + [0] + Array(value.utf8) + [0]
        }
        return bytes + Array(Self.terminator.utf8) + [0]
    }

    /// Reads the spec from `fd` one byte at a time, so that nothing after `start` (the
    /// commands, on the same descriptor) is taken.
    public static func read(from fd: Int32) throws(Failure) -> SessionSpec {
        try decode {
            var byte: UInt8 = 0
            while true {
                let n = Glibc.read(fd, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                return n == 1 ? byte : nil
            }
        }
    }

    /// Decodes a spec from `nextByte` (nil at the stream's end), asking for no byte after `start`.
    public static func decode(_ nextByte: () -> UInt8?) throws(Failure) -> SessionSpec {
        var spec = SessionSpec()
        var key: String?
        var current: [UInt8] = []
        while true {
            guard let byte = nextByte() else { throw .incomplete }
            if byte != 0 {
                current.append(byte)
                guard current.count <= fieldLimit else { throw Failure.overlong }
                continue
            }
            let field = String(decoding: current, as: UTF8.self)
            current.removeAll(keepingCapacity: true)
            if let pending = key {
                try spec.set(pending, field)
                key = nil
            } else if field == terminator {
                break
            } else {
                key = field
            }
        }
        guard !spec.user.isEmpty, spec.uid != 0, !spec.server.isEmpty, !spec.desktop.isEmpty, !spec.logDirectory.isEmpty else {
            throw .bad("the spec names no user, no uid other than root's, no display server, no desktop or no log directory")
        }
        return spec
    }

    private mutating func set(_ name: String, _ value: String) throws(Failure) {
        guard let key = Key(rawValue: name) else { throw .bad("an unknown key '\(name)'") }
        switch key {
        case .user: user = value
        case .uid: uid = try Self.number(value, key)
        case .gid: gid = try Self.number(value, key)
        case .home: home = value
        case .display: display = value
        case .sessionID: sessionID = value
        case .logDirectory: logDirectory = value
        case .logLimit: logLimit = Int(try Self.number(value, key) as UInt32)
        case .journal: journal = value == "1"
        case .cgroup: cgroup = value
        case .serverUmask: serverUmask = mode_t(try Self.number(value, key, radix: 8) as UInt32)
        case .server: server.append(value)
        case .formerServerUmask:
            serverUmask = mode_t(try Self.number(value, key, radix: 8) as UInt32)
            speaksFormerWords = true
        case .formerServer:
            server.append(value)
            speaksFormerWords = true
        case .desktop: desktop.append(value)
        case .sessionType:
            guard ["x11", "wayland"].contains(value) else { throw .bad("'\(value)' is not a session type (x11 or wayland)") }
            sessionType = value
        case .environment: environment.append(value)
        case .xSocketDirectory:
            guard value.hasPrefix("/") else { throw .bad("'\(value)' is not an absolute path for \(key.rawValue)") }
            xSocketDirectory = value
        }
    }

    private static func number<T: FixedWidthInteger>(_ text: String, _ key: Key, radix: Int = 10) throws(Failure) -> T {
        guard let value = T(text, radix: radix) else { throw .bad("'\(text)' is not a number for \(key.rawValue)") }
        return value
    }
}
