import CDeskShims
import DeskCore
import Glibc

/// The start of an RFB handshake, enough to know a VNC server really answers: its
/// ProtocolVersion, our reply, and its list of security types.
public enum RFBHandshake {
    public enum Outcome: Sendable, Equatable {
        /// The server sent its version and offered security types.
        case answered(version: String, securityTypes: [UInt8])
        /// Nothing listens there.
        case refused
        /// A connection, but no complete handshake before the deadline.
        case silent
        /// Something other than the session's Xvnc holds the endpoint.
        case impostor(String)
    }

    /// A handshake with whatever serves `endpoint`; with `xvnc`, only if that process serves it.
    public static func attempt(_ endpoint: RFBEndpoint, host: String = "127.0.0.1", xvnc: pid_t? = nil, timeoutMilliseconds: Int) -> Outcome {
        do {
            let client = try RFBClient.connect(endpoint, host: host, xvnc: xvnc, timeout: .milliseconds(timeoutMilliseconds))
            let greeting = try client.greet()
            return .answered(version: greeting.version, securityTypes: greeting.securityTypes)
        } catch {
            switch error {
            case .refused: return .refused
            case .impostor(let what): return .impostor(what)
            case .silent, .rejected: return .silent
            }
        }
    }

    /// A handshake on a loopback TCP port (tests and the benchmark; deskd passes its endpoint).
    public static func attempt(host: String = "127.0.0.1", port: Int, timeoutMilliseconds: Int32) -> Outcome {
        attempt(.tcp(port: port), host: host, timeoutMilliseconds: Int(timeoutMilliseconds))
    }
}
