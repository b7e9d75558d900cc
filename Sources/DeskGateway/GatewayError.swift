import Glibc
import NIOCore

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

extension GatewayError {
    /// "the gateway could not listen on 127.0.0.1 port 8443: Address already in use": the
    /// kernel's reason, not NIO's wrapping of the call that failed.
    static func bindFailed(_ what: String, host: String, port: Int, _ error: any Error) -> GatewayError {
        let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
        return GatewayError(.bindFailed, "\(what) could not listen on \(host) port \(port): \(reason)")
    }
}
