import Glibc

/// What deskd tells deskd-session about the desktop to run, on its stdin before anything
/// starts: NUL-separated key and value pairs, ended by the key `start`. Nothing secret travels
/// here (the VNC password is in a file of the user's), and nothing here is taken from argv,
/// which every user can read in /proc.
struct SessionSpec {
    var user = ""
    var uid: uid_t = 0
    var gid: gid_t = 0
    var home = "/"
    var display = ""
    var sessionID = ""
    /// Root's directory for this session's logs and exit statuses, under deskd's state directory.
    var logDirectory = ""
    var logLimit = 1 << 20
    /// Also copy each output line to stderr (the journal, when deskd runs under systemd).
    var journal = false
    /// The session's cgroup, where every user process is created.
    var cgroup: String?
    var xvnc: [String] = []
    var xvncUmask: mode_t = 0o077
    var desktop: [String] = []
    var environment: [String] = []

    enum Failure: Error {
        case incomplete
        case bad(String)
    }

    /// Reads the spec from `fd`, byte by byte up to `start` (what follows are commands).
    static func read(from fd: Int32) throws(Failure) -> SessionSpec {
        var spec = SessionSpec()
        var fields: [String] = []
        var current: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = Glibc.read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { throw .incomplete }
            if byte != 0 {
                current.append(byte)
                guard current.count <= 1 << 16 else { throw .bad("a field longer than 64 KiB") }
                continue
            }
            let field = String(decoding: current, as: UTF8.self)
            current.removeAll(keepingCapacity: true)
            if fields.isEmpty && field == "start" { break }
            fields.append(field)
            guard fields.count == 2 else { continue }
            try spec.set(fields[0], fields[1])
            fields.removeAll()
        }
        guard !spec.user.isEmpty, spec.uid != 0, !spec.xvnc.isEmpty, !spec.desktop.isEmpty, !spec.logDirectory.isEmpty else {
            throw .bad("the spec names no user, no uid other than root's, no Xvnc, no desktop or no log directory")
        }
        return spec
    }

    private mutating func set(_ key: String, _ value: String) throws(Failure) {
        switch key {
        case "user": user = value
        case "uid": uid = try number(value, key)
        case "gid": gid = try number(value, key)
        case "home": home = value
        case "display": display = value
        case "session-id": sessionID = value
        case "log-directory": logDirectory = value
        case "log-limit": logLimit = Int(try number(value, key) as UInt32)
        case "journal": journal = value == "1"
        case "cgroup": cgroup = value
        case "xvnc-umask": xvncUmask = mode_t(try number(value, key, radix: 8) as UInt32)
        case "xvnc": xvnc.append(value)
        case "desktop": desktop.append(value)
        case "env": environment.append(value)
        default: throw .bad("an unknown key '\(key)'")
        }
    }

    private func number<T: FixedWidthInteger>(_ text: String, _ key: String, radix: Int = 10) throws(Failure) -> T {
        guard let value = T(text, radix: radix) else { throw .bad("'\(text)' is not a number for \(key)") }
        return value
    }
}
