import DeskLinux
import FoundationEssentials
import Glibc

/// A file in one of root's own 0700 directories, replaced whole: written to a temporary file and
/// renamed over, so a daemon killed mid-write leaves the old contents or the new, never half.
/// A fixed temporary name is safe there, and O_NOFOLLOW keeps it from following anything.
enum RootFile {
    static func replace(_ path: String, with data: Data) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OSError("create", path: temporary) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw OSError("write", path: path)
        }
    }
}
