import Glibc

/// A failed system call, with what deskd was doing and on which path.
public struct OSError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let path: String?
    public let errno: Int32

    public init(_ operation: String, path: String? = nil, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(operation) \(path): \(reason)" }
        return "\(operation): \(reason)"
    }
}

/// Retries a system call interrupted by a signal.
@inline(__always)
func retryingEINTR<T: BinaryInteger>(_ body: () -> T) -> T {
    while true {
        let result = body()
        if result == -1 && errno == EINTR { continue }
        return result
    }
}
