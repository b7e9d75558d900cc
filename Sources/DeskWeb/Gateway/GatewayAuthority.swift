import DeskCore
import DeskFrontProtocol

/// deskd's side of the gateway: every decision about a link, a cookie or a desktop is its own.
/// In deskd-web, the web front, this is deskd at the other end of the front socket
/// (`RemoteAuthority`); in tests, a fake.
public protocol GatewayAuthority: Sendable {
    /// Trades a one-time link token for a short-lived, single-use cookie value (nil: unknown, used or expired).
    func exchange(token: String) async -> (cookie: String, viewOnly: Bool)?
    /// The same, for a browser that may be logged in to the portal (`portalCookie`): a link for
    /// named accounts opens only for one of them. `signedOn`: the user a trusted proxy names for
    /// the browser now; a portal login of anyone else counts as none.
    func exchange(token: String, portalCookie: String?, signedOn: String?) async -> LinkExchange
    /// Redeems that cookie at the WebSocket upgrade, once: the relay's grant and its desktop's
    /// socket, logged in to (for a view-only grant, with the view-only password, so Xvnc itself
    /// takes no input from it), or why the desktop could not be reached. nil: no such cookie.
    func redeem(cookie: String) async -> Redemption?
    /// The relay `grant` opened has ended (or never got going): it no longer counts as a viewer.
    func relayEnded(_ grant: GatewayGrant)
}

/// What a cookie spent at a WebSocket upgrade gave. The socket is the caller's to close.
public struct Redemption: Sendable {
    public var grant: GatewayGrant
    public var desktop: Result<Int32, DesktopRefusal>

    public init(grant: GatewayGrant, desktop: Result<Int32, DesktopRefusal>) {
        self.grant = grant
        self.desktop = desktop
    }
}

/// What a link's token was traded for.
public enum LinkExchange: Sendable, Equatable {
    case granted(cookie: String, viewOnly: Bool)
    /// Unknown, used or expired.
    case refused
    /// A link for named accounts, and this browser is not logged in to the portal as one of them.
    case forNamedViewers
}

extension GatewayAuthority {
    public func exchange(token: String, portalCookie: String?, signedOn: String?) async -> LinkExchange {
        guard let (cookie, viewOnly) = await exchange(token: token) else { return .refused }
        return .granted(cookie: cookie, viewOnly: viewOnly)
    }

    public func relayEnded(_ grant: GatewayGrant) {}
}

/// deskd's side of the web portal: logins, their cookies, and a logged-in page's requests.
/// Every answer is deskd's; nil where deskd could not be asked.
public protocol PortalAuthority: Sendable {
    func login(user: String, password: String, from peer: WebPeer) async -> LoginStep?
    func answer(attempt: String, text: String, from peer: WebPeer) async -> LoginStep?
    func singleSignOn(user: String, proxy: String, from peer: WebPeer) async -> LoginStep?
    func identify(cookie: String, touch: Bool) async -> WebIdentity?
    func logout(cookie: String) async
    /// Waits for a change past `after` (nil: the count now); nil when the front could not ask.
    func watch(cookie: String, after: UInt64?, signedOn: String?) async -> WatchAnswer?
    /// The control protocol's response JSON for a request's JSON, and its HTTP status; with
    /// `touch` false (the page's own polling) the login's idle clock does not start again.
    /// With `signedOn` (single sign-on), only a login of that user counts.
    func request(cookie: String, csrf: String, body: String, touch: Bool, signedOn: String?) async -> (status: Int, body: String)?
}

/// deskd's side of the portal's file calls (deskd-web: `RemoteAuthority`). Every decision is
/// deskd's, every open deskd-files', as the desktop's owner: the web front streams what it is
/// handed and opens nothing itself.
public protocol FileAuthority: Sendable {
    /// A page's file call on desktop `session`: nil when deskd could not be asked.
    func files(cookie: String, csrf: String?, session: String, call: FileCall, signedOn: String?) async -> FileReply?
    /// A transfer has ended: for a completed upload, the name it was given (or why none).
    func transferEnded(_ transfer: UInt64, bytes: UInt64, outcome: TransferOutcome) async -> FileAnswer?
}

/// What a file call gave: deskd-files' answer, and for a transfer its number and descriptor
/// (the caller's to close).
public struct FileReply: Sendable {
    public var answer: FileAnswer
    public var transfer: UInt64?
    public var descriptor: Int32?

    public init(answer: FileAnswer, transfer: UInt64? = nil, descriptor: Int32? = nil) {
        self.answer = answer
        self.transfer = transfer
        self.descriptor = descriptor
    }
}
