import DeskLinux
import Glibc

/// One deskd per runtime directory. The records there are what a deskd adopts at its start and
/// ends on `kill --all`; a second deskd on the same directory (one started with its own
/// `--socket` and `--state-dir` but the default `/run/deskd`, as a test run or a benchmark on a
/// host that serves users could) would take the first one's desktops as its own (issue 48).
///
/// The lock is an flock on `<runtime>/deskd.pid` (root's, 0600), held by the open descriptor
/// for as long as deskd runs: the kernel drops it when deskd ends however it ends, so no stale
/// lock outlives a crash, and a restart finds it free. The file names the holder (its pid and
/// control socket), for the refusal's sentence. Desktops never hold it: every process deskd starts gets
/// only the descriptors it is given.
public final class DaemonLock: Sendable {
    public static let fileName = "deskd.pid"

    /// Another deskd holds the directory.
    public struct Held: Error, CustomStringConvertible, Sendable {
        public let directory: String
        public let pid: Int32?
        public let socket: String?

        public var description: String {
            let who = pid.map { "deskd (pid \($0)" + (socket.map { ", socket \($0))" } ?? ")") } ?? "another deskd"
            return "\(who) already runs on \(directory) and owns the desktops recorded there; stop it first, "
                + "or give this deskd a runtime directory of its own (--runtime-dir, daemon.runtime_directory)."
        }
    }

    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Takes `directory` for this deskd, whose control socket is `socket`. Throws `Held` when
    /// another deskd holds it, or `OSError` when the directory cannot be made or is not root's.
    public static func acquire(directory: String, socket: String) throws -> DaemonLock {
        if mkdir(directory, 0o755) != 0 && errno != EEXIST { throw OSError("mkdir", path: directory) }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dir >= 0 else { throw OSError("open", path: directory) }
        defer { close(dir) }
        var info = stat()
        // Another user's directory (or a symlink to one), or one others may write in, is no
        // place for deskd's records or its lock.
        guard fstat(dir, &info) == 0, info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw OSError("refusing a runtime directory not owned by deskd's user, or writable by others", path: directory, errno: EPERM)
        }
        let fd = try openLockFile(in: dir, directory: directory)
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = OSError("lock", path: directory + "/" + fileName)
            defer { close(fd) }
            guard error.errno == EWOULDBLOCK else { throw error }
            throw holder(of: fd, directory: directory)
        }
        let text = Array("\(getpid())\n\(socket)\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return DaemonLock(descriptor: fd)
    }

    /// The lock file, root's and 0600: flock needs no more than a read-only descriptor, so a
    /// file anyone may open is a lock anyone may take (and hold across deskd's restart, which
    /// then refuses to start). One that is not root's 0600 regular file (no deskd makes such a
    /// file; nobody else can write in the runtime directory) is replaced by a new one.
    private static func openLockFile(in dir: Int32, directory: String) throws -> Int32 {
        let path = directory + "/" + fileName
        var fd = openat(dir, fileName, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            switch errno {
            case ENOENT: break
            // A symlink: replaced, never followed.
            case ELOOP: guard unlinkat(dir, fileName, 0) == 0 else { throw OSError("replace", path: path) }
            default: throw OSError("open", path: path)
            }
        } else {
            var info = stat()
            if fstat(fd, &info) != 0 || info.st_uid != getuid() || info.st_mode & S_IFMT != S_IFREG || info.st_mode & 0o077 != 0 {
                // Replaced only if nobody holds it: a deskd that made it so is still the holder.
                if info.st_mode & S_IFMT == S_IFREG, flock(fd, LOCK_EX | LOCK_NB) != 0, errno == EWOULDBLOCK {
                    defer { close(fd) }
                    throw holder(of: fd, directory: directory)
                }
                close(fd)
                fd = -1
                guard unlinkat(dir, fileName, 0) == 0 else { throw OSError("replace", path: path) }
            }
        }
        if fd < 0 {
            fd = openat(dir, fileName, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw OSError("create", path: path) }
        }
        return fd
    }

    /// What the holder wrote: its pid on the first line, its socket on the second.
    static func holder(of fd: Int32, directory: String) -> Held {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return parse(n > 0 ? Array(bytes[..<n]) : [], directory: directory)
    }

    static func parse(_ bytes: [UInt8], directory: String) -> Held {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let pid = lines.first.flatMap { Int32($0) }.flatMap { $0 > 0 ? $0 : nil }
        let socket = lines.count > 1 && lines[1].hasPrefix("/") && !lines[1].contains(where: \.isASCIIControl) ? String(lines[1]) : nil
        return Held(directory: directory, pid: pid, socket: socket)
    }
}

private extension Character {
    var isASCIIControl: Bool { asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false }
}
