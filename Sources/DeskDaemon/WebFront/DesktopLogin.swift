import DeskCluster
import DeskCore
import DeskFrontProtocol
import DeskLinux

/// How deskd logs in to a session's desktop for a browser: its RFB endpoint, the pid that must
/// serve it, the password, and for a cluster desktop the hop to its job's relay. Held by deskd
/// only: the web front is handed the socket once this login has succeeded.
public struct DesktopLogin: Sendable {
    /// Xvnc's RFB endpoint: its Unix socket, or its TCP port where deskd runs Xvnc on TCP.
    public var endpoint: RFBEndpoint
    /// The address a TCP endpoint is reached at (loopback unless Xvnc listens on one address only).
    public var address: String
    /// The pid that must serve `endpoint`: anything else listening there gets no password response.
    public var xvnc: Int32
    /// The VNC password (the view-only one for a view-only browser); never sent to a browser.
    /// nil for a server that asks none on its owner-only socket (wayvnc): then it must offer
    /// security type None, and the gateway keeps a view-only browser's input and the clipboard
    /// from it (`GatewayGrant.measuredDesktop`).
    public var password: String?
    /// A cluster desktop: `endpoint` is its job's relay on a compute node, which must be shown
    /// the session's key (the hop handshake) before it relays a byte; there is no local Xvnc pid.
    public var hop: Hop?
    /// The server keeps nothing from a viewer itself (wayvnc): the gateway reads what it sends
    /// (`DisplayServer.relayReadsServerMessages`).
    public var readsServerMessages: Bool

    public struct Hop: Sendable, Equatable {
        public var session: String
        public var key: [UInt8]

        public init(session: String, key: [UInt8]) {
            self.session = session
            self.key = key
        }
    }

    public init(endpoint: RFBEndpoint, address: String = "127.0.0.1", xvnc: Int32, password: String?, hop: Hop? = nil,
                readsServerMessages: Bool) {
        self.endpoint = endpoint
        self.address = address
        self.xvnc = xvnc
        self.password = password
        self.hop = hop
        self.readsServerMessages = readsServerMessages
    }

    /// Connects (checking the peer is the session's Xvnc, or passing the hop), logs in with the
    /// password, and returns the socket right after the server's SecurityResult: the next byte
    /// the server expects is the viewer's ClientInit. Blocking: call it off any event loop.
    public func open(timeout: Duration) throws(RFBClient.Failure) -> Int32 {
        let client = try RFBClient.connect(endpoint, host: address, xvnc: hop == nil ? xvnc : nil, timeout: timeout)
        if let hop {
            try client.beforeRFB { fd, deadline throws(RFBClient.Failure) in
                do { try HopAuthenticator.client(fd: fd, role: .relay, session: hop.session, key: hop.key, deadline: deadline) } catch {
                    throw .rejected("the compute node's relay: \(error)")
                }
            }
        }
        try client.authenticate(try client.greet(), password: password)
        return try client.duplicateSocket()
    }
}

extension DesktopLogin: CustomStringConvertible {
    /// Without the password, so a login can be logged or printed by a failing test.
    public var description: String {
        endpoint.description(address: address) + (hop == nil ? " (Xvnc pid \(xvnc))" : " (a compute node's relay)")
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
