import DeskCore

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
