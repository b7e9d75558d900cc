/// Why the gateway could not start, as a sentence a person can act on.
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

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
