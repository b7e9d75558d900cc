import DeskCore

/// What one browser connection may do, decided by deskd when it redeems the connection's cookie.
public struct GatewayGrant: Sendable, Equatable {
    /// The session's id, for logs and for closing its viewers.
    public var sessionID: String
    /// Xvnc's RFB endpoint: its Unix socket, or its TCP port where deskd runs Xvnc on TCP.
    public var endpoint: RFBEndpoint
    /// The address a TCP endpoint is reached at (loopback unless Xvnc listens on one address only).
    public var address: String
    /// The pid that must serve `endpoint`: anything else listening there gets no password response.
    public var xvnc: Int32
    /// The VNC password the gateway authenticates with; never sent to the browser.
    public var password: String
    public var viewOnly: Bool
    /// deskd's count of the session's revocations when the cookie was spent (`GatewayAuthority.isRevoked`).
    public var epoch: UInt64
    /// A cluster desktop: `endpoint` is its job's relay on a compute node, which must be shown
    /// the session's key (the hop handshake) before it relays a byte; there is no local Xvnc pid.
    public var hop: Hop?

    public struct Hop: Sendable, Equatable {
        public var session: String
        public var key: [UInt8]

        public init(session: String, key: [UInt8]) {
            self.session = session
            self.key = key
        }
    }

    public init(sessionID: String, endpoint: RFBEndpoint, address: String = "127.0.0.1", xvnc: Int32, password: String, viewOnly: Bool,
                epoch: UInt64 = 0, hop: Hop? = nil) {
        self.sessionID = sessionID
        self.endpoint = endpoint
        self.address = address
        self.xvnc = xvnc
        self.password = password
        self.viewOnly = viewOnly
        self.epoch = epoch
        self.hop = hop
    }
}

extension GatewayGrant: CustomStringConvertible {
    /// Without the password, so a grant can be logged or printed by a failing test.
    public var description: String {
        "session \(sessionID) at \(endpoint.description(address: address)) " + (hop == nil ? "(Xvnc pid \(xvnc))" : "(a compute node's relay)") + (viewOnly ? ", view-only" : "")
    }
}

extension RFBEndpoint {
    func description(address: String) -> String {
        switch self {
        case .unixSocket(let path): path
        case .tcp(let port): "\(address):\(port)"
        }
    }
}
