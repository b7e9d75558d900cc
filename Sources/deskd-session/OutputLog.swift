import Glibc

/// One session process's output (stdout and stderr), read from a pipe and kept in a file of
/// root's under deskd's state directory, so it outlives the session and no user can grow it
/// past its cap: at `limit` bytes the file becomes `NAME.1` (the older `.1` is dropped), so
/// the last one to two `limit`s are kept. With `journal`, each line also goes to stderr,
/// prefixed with the session, for systemd's journal.
final class OutputLog {
    let path: String
    let limit: Int
    let prefix: String?
    private var fd: Int32
    private var size: Int
    private var pendingLine: [UInt8] = []

    init(path: String, limit: Int, journalPrefix: String?) {
        self.path = path
        self.limit = max(limit, 4096)
        self.prefix = journalPrefix
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        var info = stat()
        size = fd >= 0 && fstat(fd, &info) == 0 ? Int(info.st_size) : 0
    }

    deinit {
        flushLine()
        if fd >= 0 { Glibc.close(fd) }
    }

    func append(_ bytes: ArraySlice<UInt8>) {
        guard !bytes.isEmpty else { return }
        if fd >= 0 {
            if size + bytes.count > limit { rotate() }
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written > 0 { size += written }
        }
        guard prefix != nil else { return }
        for byte in bytes {
            if byte == UInt8(ascii: "\n") { flushLine() } else if pendingLine.count < 4096 { pendingLine.append(byte) }
        }
    }

    private func rotate() {
        rename(path, path + ".1")
        Glibc.close(fd)
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        size = 0
    }

    private func flushLine() {
        guard let prefix, !pendingLine.isEmpty else { return }
        let line = Array(prefix.utf8) + pendingLine + [UInt8(ascii: "\n")]
        _ = line.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
        pendingLine.removeAll(keepingCapacity: true)
    }
}
