import DeskCore
import DeskLinux
import Glibc

/// A session's directory, `<runtime>/by-id/<id>`: the password file, the X authority, the
/// rendered xstartup, the logs, any TLS files, and the RFB socket Xvnc binds there.
///
/// The directory and everything in it are the session user's (the directory 0700, so no other
/// user can even look up the socket, the files 0600): Xvnc, running as the user, must be able
/// to bind its socket in it. Root builds it before handing it over: every file is created with
/// O_EXCL|O_NOFOLLOW relative to the directory's descriptor, owned by the user and given its
/// mode before a byte is written, and the directory is chowned last. From then on root reads
/// the user's files only through `UntrustedFile`, writes only by descriptor-relative calls,
/// connects to the socket only by O_PATH (`RFBClient`), and removes the tree without following
/// a link (`SecureTree`). The user cannot rename or replace the directory itself: its parent is root's.
public struct SessionDirectory: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public static let rfbSocketName = "rfb.sock"

    public var passwordFile: String { path + "/passwd" }
    public var xauthority: String { path + "/Xauthority" }
    public var xstartup: String { path + "/xstartup" }
    public var rfbSocket: String { path + "/" + Self.rfbSocketName }
    /// The session's own /tmp/.X11-unix (deskd-session mounts it there for the session alone):
    /// its X sockets are reached through this 0700 directory, so by no one but the owner.
    public var xSocketDirectory: String { path + "/" + Self.xSocketDirectoryName }
    public static let xSocketDirectoryName = "X11-unix"

    public var tlsCertificate: String { path + "/tls-cert.pem" }
    public var tlsKey: String { path + "/tls-key.pem" }

    /// What a session directory holds when it is handed to its user.
    /// A file the server does not use is not written: a Wayland desktop has neither a VNC
    /// password nor an X authority of deskd's.
    public struct Contents {
        public var password: [UInt8]?
        public var xauthority: [UInt8]?
        public var xstartup: String
        /// Copies of the admin's certificate and key, for Xvnc running as the user (so the
        /// originals may stay root-only).
        public var tls: (certificate: [UInt8], key: [UInt8])?

        public init(password: [UInt8]?, xauthority: [UInt8]?, xstartup: String, tls: (certificate: [UInt8], key: [UInt8])? = nil) {
            self.password = password
            self.xauthority = xauthority
            self.xstartup = xstartup
            self.tls = tls
        }
    }

    /// Creates the directory and its files for `owner`. (The session's logs are not here: they are
    /// root's, under deskd's state directory, so they outlive the session and no user can grow them.)
    public func create(owner: uid_t, group: gid_t, contents: Contents) throws(OSError) {
        SecureTree.remove(path)
        guard mkdir(path, 0o700) == 0 else { throw OSError("mkdir", path: path) }
        let dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dir >= 0 else { throw OSError("open", path: path) }
        defer { close(dir) }
        if let password = contents.password {
            try Self.createFile(in: dir, "passwd", mode: 0o600, owner: owner, group: group, contents: password, path: path)
        }
        if let xauthority = contents.xauthority {
            try Self.createFile(in: dir, "Xauthority", mode: 0o600, owner: owner, group: group, contents: xauthority, path: path)
        }
        try Self.createFile(in: dir, "xstartup", mode: 0o700, owner: owner, group: group, contents: Array(contents.xstartup.utf8), path: path)
        if let tls = contents.tls {
            try Self.createFile(in: dir, "tls-cert.pem", mode: 0o600, owner: owner, group: group, contents: tls.certificate, path: path)
            try Self.createFile(in: dir, "tls-key.pem", mode: 0o600, owner: owner, group: group, contents: tls.key, path: path)
        }
        guard mkdirat(dir, Self.xSocketDirectoryName, 0o700) == 0 else { throw OSError("mkdir", path: xSocketDirectory) }
        guard fchownat(dir, Self.xSocketDirectoryName, owner, group, AT_SYMLINK_NOFOLLOW) == 0 else { throw OSError("chown", path: xSocketDirectory) }
        // Last: until now the directory was root's, so nothing in it can be the user's doing.
        guard fchown(dir, owner, group) == 0, fchmod(dir, 0o700) == 0 else { throw OSError("chown", path: path) }
    }

    /// Replaces the password file in place (Xvnc re-reads it on every authentication).
    /// The new file is written under a temporary name and renamed over the old one, both relative
    /// to the directory's descriptor, so a symlink planted by the user is replaced, never followed.
    public func replacePassword(_ bytes: [UInt8], owner: uid_t, group: gid_t) throws(OSError) {
        let dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dir >= 0 else { throw OSError("open", path: path) }
        defer { close(dir) }
        let temporary = ".passwd.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        try Self.createFile(in: dir, temporary, mode: 0o600, owner: owner, group: group, contents: bytes, path: path)
        guard renameat(dir, temporary, dir, "passwd") == 0 else {
            let error = OSError("rename", path: passwordFile)
            unlinkat(dir, temporary, 0)
            throw error
        }
    }

    /// The password file's bytes: one or two 8-byte blocks, nothing else.
    public func readPasswordFile() -> [UInt8]? {
        guard case .contents(let bytes, let size, _) = UntrustedFile.read(passwordFile, limit: 16), (8...16).contains(size) else { return nil }
        return bytes
    }

    /// The last lines of a log, for an error message: at most the last 16 KiB, and only of a
    /// regular file (what is in it is the user's programs' doing).
    public static func tail(of log: String, lines: Int = 8) -> [String] {
        guard case .contents(let bytes, _, _) = UntrustedFile.read(log, limit: 16 << 10, tail: true), !bytes.isEmpty else { return [] }
        return Array(String(decoding: bytes, as: UTF8.self).split(separator: "\n").suffix(lines).map(String.init))
    }

    public func remove() {
        SecureTree.remove(path)
    }

    private static func createFile(in dir: Int32, _ name: String, mode: mode_t, owner: uid_t, group: gid_t,
                                   contents: [UInt8], path: String) throws(OSError) {
        // The mode is set at creation, so a secret is never readable by others, not even for an instant.
        let fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw OSError("create", path: path + "/" + name) }
        var ok = fchown(fd, owner, group) == 0 && fchmod(fd, mode) == 0
        var offset = 0
        while ok && offset < contents.count {
            let n = contents[offset...].withUnsafeBytes { buffer in retryingEINTR { write(fd, buffer.baseAddress, buffer.count) } }
            ok = n > 0
            offset += max(n, 0)
        }
        guard ok else {
            let error = OSError("write", path: path + "/" + name)
            close(fd)
            throw error
        }
        close(fd)
    }
}
