import Glibc

/// Writes `text` to stderr, whole, with write(2): Foundation's FileHandle is not in
/// FoundationEssentials, and Glibc's `stderr` is a global Swift 6 will not share.
func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
