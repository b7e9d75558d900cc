import FoundationEssentials

/// Who a portal login is, as the page may know it (no secret but the CSRF token it must send back).
public struct WebIdentity: Sendable, Equatable, Codable {
    public var user: String
    public var uid: UInt32
    public var isAdmin: Bool
    /// Sent back in X-Deskd-CSRF with every request that changes something.
    public var csrf: String
    /// Logged in through the site's proxy (single sign-on), not with a password here.
    public var singleSignOn: Bool
    /// Seconds until the login ends without a request, and in any case.
    public var idleSeconds: Int
    public var lifetimeSeconds: Int

    public init(user: String, uid: UInt32, isAdmin: Bool, csrf: String, singleSignOn: Bool = false, idleSeconds: Int, lifetimeSeconds: Int) {
        self.user = user
        self.singleSignOn = singleSignOn
        self.uid = uid
        self.isAdmin = isAdmin
        self.csrf = csrf
        self.idleSeconds = idleSeconds
        self.lifetimeSeconds = lifetimeSeconds
    }
}
