import Glibc

/// A `sockaddr_un` for a path, or for an abstract name written `@name` (as systemd writes
/// $NOTIFY_SOCKET). nil when the path does not fit.
///
/// sun_path holds 108 bytes. A path needs one of them for its terminating NUL, so it has at most
/// 107, and may hold no NUL before that (the kernel would stop there, at another file). An
/// abstract name is exactly its bytes, the leading NUL written "@" included, so it may fill all 108.
public struct UnixSocketAddress {
    private var address = sockaddr_un()
    private let length: socklen_t

    public init?(_ path: String) {
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let abstract = bytes.first == UInt8(ascii: "@")
        guard !bytes.isEmpty, abstract ? bytes.count <= capacity : bytes.count < capacity && !bytes.contains(0) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
            if abstract { raw[0] = 0 }
        }
        // An abstract name is exactly its bytes; a path is counted with its terminating NUL.
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
    }

    /// Calls `body` with the address and its length, for connect, bind or sendto.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
