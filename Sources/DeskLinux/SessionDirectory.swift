import Glibc

/// A session's runtime directory, `<runtime>/displays/<n>`: the password file, the rendered
/// xstartup, the logs and any TLS files, each owned by the session's user.
///
/// Root never follows a path the user controls: the directory stays root-owned (0711), so the
/// user can read and write their files but never rename, replace or symlink an entry; every
/// file is created with O_EXCL|O_NOFOLLOW relative to the directory's descriptor, owned by the
/// user and given its mode before a byte is written.
public struct SessionDirectory: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public var passwordFile: String { path + "/passwd" }
    public var xstartup: String { path + "/xstartup" }
    public var xvncLog: String { path + "/Xvnc.log" }
    public var desktopLog: String { path + "/desktop.log" }

    public var tlsCertificate: String { path + "/tls-cert.pem" }
    public var tlsKey: String { path + "/tls-key.pem" }

    /// Creates the directory and its files for `owner`; returns open descriptors for the two logs.
    /// `tls` holds the certificate and key Xvnc (running as the user) must read: copies, so the
    /// admin's originals can stay root-only.
    public func create(owner: uid_t, group: gid_t, password: [UInt8], xstartup: String,
                       tls: (certificate: [UInt8], key: [UInt8])? = nil) throws(OSError) -> (xvncLog: Int32, desktopLog: Int32) {
        SecureTree.remove(path)
        guard mkdir(path, 0o711) == 0 else { throw OSError("mkdir", path: path) }
        let dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dir >= 0 else { throw OSError("open", path: path) }
        defer { close(dir) }
        try Self.createFile(in: dir, "passwd", mode: 0o600, owner: owner, group: group, contents: password, path: path)
        try Self.createFile(in: dir, "xstartup", mode: 0o700, owner: owner, group: group, contents: Array(xstartup.utf8), path: path)
        if let tls {
            try Self.createFile(in: dir, "tls-cert.pem", mode: 0o600, owner: owner, group: group, contents: tls.certificate, path: path)
            try Self.createFile(in: dir, "tls-key.pem", mode: 0o600, owner: owner, group: group, contents: tls.key, path: path)
        }
        let xvncLog = try Self.createFile(in: dir, "Xvnc.log", mode: 0o600, owner: owner, group: group, contents: [], path: path, keepOpen: true)
        let desktopLog = try Self.createFile(in: dir, "desktop.log", mode: 0o600, owner: owner, group: group, contents: [], path: path, keepOpen: true)
        return (xvncLog, desktopLog)
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
        guard let file = Self.readUsersFile(passwordFile, lastBytes: 16), (8...16).contains(file.size), file.bytes.count == file.size else { return nil }
        return file.bytes
    }

    /// The last lines of a log, for an error message: at most the last 16 KiB, and only of a
    /// regular file (the user writes the log, and may have made it huge).
    public func tail(of log: String, lines: Int = 8) -> [String] {
        guard let bytes = Self.readUsersFile(log, lastBytes: 16 << 10)?.bytes, !bytes.isEmpty else { return [] }
        return Array(String(decoding: bytes, as: UTF8.self).split(separator: "\n").suffix(lines).map(String.init))
    }

    /// The last `lastBytes` bytes of a file the user owns, and its whole size, read as root:
    /// never through a symlink, never blocking on a FIFO, only from a regular file.
    private static func readUsersFile(_ path: String, lastBytes: Int) -> (bytes: [UInt8], size: Int)? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let length = min(Int(info.st_size), lastBytes)
        var bytes = [UInt8](repeating: 0, count: length)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(Int(info.st_size) - length)) }
        return n >= 0 ? (Array(bytes.prefix(n)), Int(info.st_size)) : nil
    }

    public func remove() {
        SecureTree.remove(path)
    }

    @discardableResult
    private static func createFile(in dir: Int32, _ name: String, mode: mode_t, owner: uid_t, group: gid_t,
                                   contents: [UInt8], path: String, keepOpen: Bool = false) throws(OSError) -> Int32 {
        // The mode is set at creation, so a secret is never readable by others, not even for an instant.
        let fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | (keepOpen ? O_APPEND : 0), mode)
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
        if keepOpen { return fd }
        close(fd)
        return -1
    }
}

/// Removal of a directory tree that never follows a symlink: everything below is opened
/// relative to its parent's descriptor with O_NOFOLLOW, and symlinks are unlinked, not entered.
public enum SecureTree {
    public static func remove(_ path: String) {
        guard unlink(path) != 0 else { return }   // a file or a symlink: gone
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        removeContents(of: fd, depth: 0)
        close(fd)
        rmdir(path)
    }

    private static func removeContents(of dirFD: Int32, depth: Int) {
        guard depth < 32, let dir = fdopendir(dup(dirFD)) else { return }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        for name in names where unlinkat(dirFD, name, 0) != 0 && errno == EISDIR {
            let child = openat(dirFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 {
                removeContents(of: child, depth: depth + 1)
                close(child)
            }
            unlinkat(dirFD, name, AT_REMOVEDIR)
        }
    }
}
