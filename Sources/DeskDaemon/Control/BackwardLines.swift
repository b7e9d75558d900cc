import Glibc

/// The lines of a file from its last to its first, read in chunks from the end, so a reader that
/// wants only the newest lines of a large file reads only those. Each byte is scanned once and
/// at most `longest` bytes of a line are held, however long the line (a log may be one 8 MiB
/// line without a newline): the cost is linear in what is read.
enum BackwardLines {
    /// Calls `body` with each non-empty line, last first, until it returns false: a line longer
    /// than `longest` comes as its first `longest` bytes with `cut` set.
    static func each(in path: String, chunk: Int = 64 << 10, longest: Int = 1 << 20,
                     _ body: (_ line: ArraySlice<UInt8>, _ cut: Bool) -> Bool) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return }
        var end = Int(info.st_size)
        // The first bytes (up to `longest`) of the line that continues after this chunk, and its full length.
        var pending: [UInt8] = []
        var pendingLength = 0
        var buffer = [UInt8](repeating: 0, count: chunk)
        while end > 0 {
            let start = max(0, end - chunk)
            let read = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, end - start, off_t(start)) }
            guard read == end - start else { return }
            let block = buffer[0..<read]
            var lineEnd = read   // where the newest line still to be delivered ends within `block`
            var index = read - 1
            while index >= 0 {
                if block[index] == UInt8(ascii: "\n") {
                    // block[index+1 ..< lineEnd] followed by `pending` (only for the first newline found) is a whole line.
                    let length = lineEnd - (index + 1) + pendingLength
                    if length > 0 {
                        var line = Array(block[(index + 1)..<min(lineEnd, index + 1 + longest)])
                        if line.count < longest { line += pending.prefix(longest - line.count) }
                        if !body(line[...], length > longest) { return }
                    }
                    pending = []
                    pendingLength = 0
                    lineEnd = index
                }
                index -= 1
            }
            // What precedes the chunk's first newline begins a line that started in an earlier chunk.
            if lineEnd > 0 {
                var joined = Array(block[0..<min(lineEnd, longest)])
                if joined.count < longest { joined += pending.prefix(longest - joined.count) }
                pending = joined
                pendingLength += lineEnd
            }
            end = start
        }
        if pendingLength > 0 { _ = body(pending[...], pendingLength > longest) }
    }
}
