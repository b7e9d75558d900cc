/// What one browser connection may do, decided by deskd when it redeems the connection's cookie.
/// It names the relay and nothing that reaches the desktop: the gateway gets the desktop's
/// socket, already logged in to, with it (`FrontEvent.redeemed`).
public struct GatewayGrant: Sendable, Equatable, Codable {
    /// The session's id, for logs and for closing its viewers.
    public var sessionID: String
    public var viewOnly: Bool
    /// deskd's number for this one browser's relay: what it closes by, and what the gateway
    /// reports closed.
    public var relay: UInt64
    /// The desktop's VNC server gives every login input and its clipboard (wayvnc on the
    /// owner-only socket, which asks no password): the gateway reads the desktop's messages too,
    /// and keeps its clipboard from a browser that may not have it. An Xvnc desktop's stream is
    /// relayed unread, since Xvnc itself keeps both from a view-only login.
    public var measuredDesktop: Bool

    public init(sessionID: String, viewOnly: Bool, relay: UInt64, measuredDesktop: Bool = false) {
        self.sessionID = sessionID
        self.viewOnly = viewOnly
        self.relay = relay
        self.measuredDesktop = measuredDesktop
    }
}

extension GatewayGrant: CustomStringConvertible {
    public var description: String {
        "session \(sessionID), relay \(relay)" + (viewOnly ? ", view-only" : "") + (measuredDesktop ? ", measured" : "")
    }
}

/// Why a granted browser's desktop could not be reached: said to the gateway's log, never to the browser.
public struct DesktopRefusal: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
