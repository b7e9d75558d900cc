import DeskCore
import Glibc

/// Where session directories live: `<runtime>/by-id/<session id>/`, one per session, and
/// `<runtime>/displays/<n>`, a root-owned symlink to the directory of the session that holds
/// display n now. Users and their ssh tunnels use the stable display path
/// (`ssh -L 5901:/run/deskd/displays/1/rfb.sock ...`); deskd itself only ever uses the id path,
/// so tearing down a session can never touch the files of a newer session on the same display.
public struct SessionDirectories: Sendable {
    public let runtimeDirectory: String

    public init(runtimeDirectory: String) {
        self.runtimeDirectory = runtimeDirectory
    }

    public var byID: String { runtimeDirectory + "/by-id" }
    public var displays: String { runtimeDirectory + "/displays" }

    public func directory(for sessionID: String) -> SessionDirectory {
        SessionDirectory(path: byID + "/" + sessionID)
    }

    /// The stable path of the session's RFB socket, through the display's link.
    public func rfbSocket(for display: Display) -> String {
        displays + "/\(display.number)/" + SessionDirectory.rfbSocketName
    }

    /// Points `displays/<n>` at the session, replacing whatever link was there (written under a
    /// temporary name and renamed, so the path always resolves to one session or none).
    public func publish(_ display: Display, sessionID: String) throws(OSError) {
        let link = displays + "/\(display.number)"
        let temporary = link + ".\(sessionID).tmp"
        unlink(temporary)
        guard symlink("../by-id/" + sessionID, temporary) == 0 else { throw OSError("symlink", path: temporary) }
        guard rename(temporary, link) == 0 else {
            let error = OSError("rename", path: link)
            unlink(temporary)
            // A directory left by an older deskd (sessions were once keyed by display): replace it.
            if error.errno == EISDIR || error.errno == ENOTEMPTY || error.errno == EEXIST {
                SecureTree.remove(link)
                if symlink("../by-id/" + sessionID, link) == 0 { return }
            }
            throw error
        }
    }

    /// Removes `displays/<n>` if, and only if, it still points at `sessionID`.
    public func unpublish(_ display: Display, sessionID: String) {
        let link = displays + "/\(display.number)"
        var buffer = [CChar](repeating: 0, count: 256)
        let n = readlink(link, &buffer, buffer.count - 1)
        guard n > 0, String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "../by-id/" + sessionID else { return }
        unlink(link)
    }
}

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

    public var tlsCertificate: String { path + "/tls-cert.pem" }
    public var tlsKey: String { path + "/tls-key.pem" }

    /// What a session directory holds when it is handed to its user.
    public struct Contents {
        public var password: [UInt8]
        public var xauthority: [UInt8]
        public var xstartup: String
        /// Copies of the admin's certificate and key, for Xvnc running as the user (so the
        /// originals may stay root-only).
        public var tls: (certificate: [UInt8], key: [UInt8])?

        public init(password: [UInt8], xauthority: [UInt8], xstartup: String, tls: (certificate: [UInt8], key: [UInt8])? = nil) {
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
        try Self.createFile(in: dir, "passwd", mode: 0o600, owner: owner, group: group, contents: contents.password, path: path)
        try Self.createFile(in: dir, "Xauthority", mode: 0o600, owner: owner, group: group, contents: contents.xauthority, path: path)
        try Self.createFile(in: dir, "xstartup", mode: 0o700, owner: owner, group: group, contents: Array(contents.xstartup.utf8), path: path)
        if let tls = contents.tls {
            try Self.createFile(in: dir, "tls-cert.pem", mode: 0o600, owner: owner, group: group, contents: tls.certificate, path: path)
            try Self.createFile(in: dir, "tls-key.pem", mode: 0o600, owner: owner, group: group, contents: tls.key, path: path)
        }
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

/// Removal of a directory tree that never follows a symlink: everything below is opened
/// relative to its parent's descriptor with O_NOFOLLOW, and symlinks are unlinked, not entered.
///
/// The walk holds one descriptor per level, so it goes at most `maxDepth` levels down; a
/// directory deeper than that (a user can nest thousands in a session directory) is moved up to
/// the top of the tree, by a rename that never follows a link either, and emptied on the next
/// pass. So a tree of any depth is removed whole, with bounded descriptors and stack.
public enum SecureTree {
    static let maxDepth = 32
    /// Each pass takes `maxDepth - 1` more levels off the deepest branch: enough for any tree
    /// that stands still, and an end for one that something keeps growing.
    static let maxPasses = 4096

    public static func remove(_ path: String) {
        guard unlink(path) != 0 else { return }   // a file or a symlink: gone
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        var moved = 0
        for _ in 0..<maxPasses {
            let before = moved
            removeContents(of: fd, top: fd, depth: 0, moved: &moved)
            if moved == before { break }
        }
        close(fd)
        rmdir(path)
    }

    /// Empties the directory `dirFD`, `depth` levels below `top`; counts in `moved` the
    /// directories moved up to `top` because they lie too deep.
    private static func removeContents(of dirFD: Int32, top: Int32, depth: Int, moved: inout Int) {
        let listing = dup(dirFD)
        guard listing >= 0 else { return }
        guard let dir = fdopendir(listing) else { close(listing); return }
        rewinddir(dir)   // the duplicate shares the offset of an earlier pass's listing
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(dir)   // before descending: one descriptor per level, not two
        for name in names where unlinkat(dirFD, name, 0) != 0 && errno == EISDIR {
            if depth + 1 >= maxDepth {
                if moveUp(name, from: dirFD, to: top, number: moved) { moved += 1 }
                continue
            }
            let child = openat(dirFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 {
                removeContents(of: child, top: top, depth: depth + 1, moved: &moved)
                close(child)
            }
            unlinkat(dirFD, name, AT_REMOVEDIR)
        }
    }

    /// Renames `name` in `dirFD` to a fresh name in `top`. (Renaming over an empty directory
    /// replaces it, which removes nothing the walk would not; a taken name is skipped.)
    private static func moveUp(_ name: String, from dirFD: Int32, to top: Int32, number: Int) -> Bool {
        for attempt in 0..<8 {
            let target = ".deskd-deep-\(number)-\(attempt)-\(UInt32.random(in: 0...UInt32.max))"
            if renameat(dirFD, name, top, target) == 0 { return true }
            guard errno == ENOTEMPTY || errno == EEXIST || errno == ENOTDIR || errno == EISDIR else { return false }
        }
        return false
    }
}
