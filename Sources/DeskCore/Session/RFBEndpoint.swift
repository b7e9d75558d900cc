import FoundationEssentials

/// Where a session's Xvnc accepts viewers.
public enum RFBEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// A Unix socket in the session directory (the default: no TCP port at all).
    case unixSocket(path: String)
    /// A TCP port (5900+N), on loopback or the configured address.
    case tcp(port: Int)

    public var description: String {
        switch self {
        case .unixSocket(let path): path
        case .tcp(let port): "TCP port \(port)"
        }
    }
}
