import Glibc

/// A read, as root, of a file that another user can create or replace: an X lock in /tmp, a
/// log or password file in a session directory.
///
/// Every such open is O_NOFOLLOW (a planted symlink is refused, never followed) and O_NONBLOCK
/// (a FIFO does not wait for a writer, and a file lease makes the open fail with EWOULDBLOCK
/// instead of waiting out the lease-break time); only a regular file is read, and only up to a
/// cap. So a read here finishes in bounded time whatever the other user planted.
public enum UntrustedFile {
    public enum Outcome: Equatable, Sendable {
        /// The last `limit` bytes (or all of them) and the file's whole size.
        case contents([UInt8], size: Int, owner: uid_t)
        case missing
        /// Present, but not something deskd reads: "a symlink", "a FIFO", "leased by another process"...
        case refused(String)
    }

    /// Reads the whole file if it is at most `limit` bytes; a larger one is `refused` unless
    /// `tail` is set, which reads its last `limit` bytes instead.
    public static func read(_ path: String, limit: Int, tail: Bool = false) -> Outcome {
        let fd = retryingEINTR { open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) }
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return .missing
            case ELOOP: return .refused("is a symlink")
            case EWOULDBLOCK: return .refused("is leased by another process")
            case ENXIO: return .refused("is a socket")
            default: return .refused("cannot be opened (\(String(cString: strerror(errno))))")
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .refused("cannot be examined") }
        guard info.st_mode & S_IFMT == S_IFREG else { return .refused("is \(kind(info.st_mode))") }
        let size = Int(info.st_size)
        guard size <= limit || tail else { return .refused("is \(size) bytes, more than the \(limit) expected") }
        let length = min(size, limit)
        var bytes = [UInt8](repeating: 0, count: length)
        let n = bytes.withUnsafeMutableBytes { buffer in retryingEINTR { pread(fd, buffer.baseAddress, length, off_t(size - length)) } }
        guard n >= 0 else { return .refused("cannot be read (\(String(cString: strerror(errno))))") }
        return .contents(Array(bytes.prefix(n)), size: size, owner: info.st_uid)
    }

    /// What a file type is called in a sentence.
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFLNK: "a symlink"
        default: "not a regular file"
        }
    }
}
