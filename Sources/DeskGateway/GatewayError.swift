import DeskCore
import DeskLinux
import NIOCore

/// Why the gateway could not start, as a sentence a person can act on, and its cause for the log.
public struct GatewayError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Code: String, Sendable {
        case plainHTTPOffLoopback = "plain-http-off-loopback"
        case incompleteTLS = "incomplete-tls"
        case tlsUnreadable = "tls-unreadable"
        case badListen = "bad-listen"
        case bindFailed = "bind-failed"
    }

    public let code: Code
    public let message: String
    /// What lay under it: the failed call and its errno, or a library's own words.
    public let cause: DeskError.Cause?

    public init(_ code: Code, _ message: String, cause: DeskError.Cause? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { message }
}

extension GatewayError {
    /// "the gateway could not listen on 127.0.0.1 port 8443: Address already in use": the
    /// kernel's reason, not NIO's wrapping of the call that failed.
    static func bindFailed(_ what: String, host: String, port: Int, _ error: any Error) -> GatewayError {
        let failure = (error as? IOError).map { OSError("bind", path: "\(host):\(port)", errno: $0.errnoCode) }
        return GatewayError(.bindFailed, "\(what) could not listen on \(host) port \(port): \(failure?.reason ?? "\(error)")",
                            cause: failure.map(DeskError.Cause.init) ?? .other("\(error)"))
    }
}
