import CDeskShims
import DeskCore
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

    /// strerror's text for the errno: "No such file or directory".
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String {
        if let path { return "\(operation) \(path): \(reason)" }
        return "\(operation): \(reason)"
    }
}

extension DeskError.Cause {
    /// The failed call as a cause: `DeskError(.internalError, "could not … \(error).", cause: .init(error))`.
    public init(_ error: OSError) {
        self = .system(operation: error.operation, path: error.path, errno: error.errno,
                       name: deskd_errno_name(error.errno).map { String(cString: $0) }, text: error.reason)
    }
}

/// Retries a system call interrupted by a signal.
@inline(__always)
public func retryingEINTR<T: BinaryInteger>(_ body: () -> T) -> T {
    while true {
        let result = body()
        if result == -1 && errno == EINTR { continue }
        return result
    }
}
