import FoundationEssentials

/// What deskd-web, the web front, asks deskd over deskd's front socket. Every decision is
/// deskd's: the front holds no password and opens no desktop itself.
public enum FrontRequest: Sendable, Equatable, Codable {
    /// A link's token, traded for a cookie (`FrontEvent.exchanged`), with the browser's portal
    /// login cookie where it has one (a link for named accounts opens only for them), and the
    /// user a trusted proxy names for this browser now, if it does (a login of anyone else is none).
    case exchange(call: UInt64, token: String, viewer: String?, signedOn: String?)
    /// A cookie, spent at a WebSocket upgrade: deskd grants the browser's relay and logs in to
    /// its desktop, in one round trip (`FrontEvent.redeemed`, with the desktop's socket).
    case redeem(call: UInt64, cookie: String)
    /// A relay has ended; its browser no longer counts as a viewer.
    case relayEnded(relay: UInt64)
    /// The metrics text for a scrape of `/metrics` (`FrontEvent.scraped`).
    case scrape(call: UInt64)
    /// The gateway's counters now, for deskd's metrics.
    case counts(GatewayMetrics.Snapshot)
    /// A listener deskd passed could not be served (its TLS material, most likely).
    case listenerFailed(listener: String, reason: String)
    /// A portal login: the account's name and password, and the browser's address (for the
    /// audit trail) and client (`WebPeer`: for the throttle, the login slots and the audit's
    /// allowance). `FrontEvent.loginStep`.
    case login(call: UInt64, user: String, password: String, address: String, client: String)
    /// The answer to a login's further question (a one-time code, a new password). `FrontEvent.loginStep`.
    case loginAnswer(call: UInt64, attempt: String, answer: String, address: String, client: String)
    /// A portal login by single sign-on: `user` as the trusted proxy at `proxy` named them (the
    /// front checked the peer; deskd checks it again against its own list). `FrontEvent.loginStep`.
    case singleSignOn(call: UInt64, user: String, proxy: String, address: String, client: String)
    /// Who a portal cookie is, touching its idle clock unless `touch` is false. `FrontEvent.identity`.
    case identify(call: UInt64, cookie: String, touch: Bool)
    /// Waits (up to half a minute) for a change a logged-in page would show, past `after`; nil
    /// `after`: the count now, at once. `FrontEvent.watched`. (A page's live updates.)
    /// `signedOn`: the user a trusted proxy names for this browser; a login of anyone else is none.
    case watch(call: UInt64, cookie: String, after: UInt64?, signedOn: String?)
    /// Ends a portal login. `FrontEvent.identity` (nil).
    case logout(call: UInt64, cookie: String)
    /// A control-protocol request from a logged-in page: the cookie, the page's CSRF token, and
    /// the request's JSON as the control socket takes it. `FrontEvent.answered`.
    /// `touch` false: a page's own polling, which does not count as activity. `signedOn`: the
    /// user a trusted proxy names for this browser; a login of anyone else is answered 401.
    case request(call: UInt64, cookie: String, csrf: String, body: String, touch: Bool, signedOn: String?)
}

/// Where a browser's request came from, as the front saw it: its address, which the audit trail
/// shows, and its client, which every per-client bound counts by: "uid:N" for a peer on this host
/// (the account that owns its end of the connection), a remote IPv4 address, an IPv6 /64 as
/// "PREFIX::/64", or "loopback" where the kernel could not say.
public struct WebPeer: Sendable, Equatable, Codable {
    public var address: String
    public var client: String

    public init(address: String, client: String) {
        self.address = address
        self.client = client
    }
}

/// What a watch found: the changes' count (nil: nothing new in time), whether the login is
/// alive, and whose login it is.
public struct WatchAnswer: Sendable, Equatable {
    public var generation: UInt64?
    public var loggedIn: Bool
    public var account: UInt32?

    public init(generation: UInt64?, loggedIn: Bool, account: UInt32? = nil) {
        self.generation = generation
        self.loggedIn = loggedIn
        self.account = account
    }
}

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

/// Where a portal login stands.
public enum LoginStep: Sendable, Equatable, Codable {
    /// PAM asks something more: shown in the page, answered with `loginAnswer`.
    case question(attempt: String, text: String, echo: Bool, messages: [String])
    /// Logged in: the cookie to set, and who it is.
    case loggedIn(cookie: String, identity: WebIdentity)
    /// Refused, in one sentence.
    case refused(message: String)
}

/// What deskd tells its web front.
public enum FrontEvent: Sendable, Equatable, Codable {
    /// First, on every connection: what the front serves. nil `gateway`: no gateway; nil
    /// `portal`: the portal's page files were not found (its page answers 503 and says so).
    case setup(gateway: GatewayConfiguration?, portal: PortalPage?)
    /// A listening socket to serve ("gateway", with its TLS material where it has some, or
    /// "metrics"): carries the socket.
    case listen(listener: String, tls: TLSMaterial?)
    /// nil `cookie`: refused; `forNamedViewers`: because the link is for accounts this browser's login is none of.
    case exchanged(call: UInt64, cookie: String?, viewOnly: Bool, forNamedViewers: Bool)
    /// nil `grant`: the cookie is unknown, spent or expired. A grant carries the desktop's
    /// socket, logged in to, when `refusal` is nil; with a refusal the desktop could not be
    /// reached (the gateway tells the browser so in RFB).
    case redeemed(call: UInt64, grant: GatewayGrant?, refusal: DesktopRefusal?)
    case scraped(call: UInt64, text: String)
    /// Close these relays: their session ended, or its links were taken back.
    case disconnect(relays: [UInt64])
    case loginStep(call: UInt64, step: LoginStep)
    /// nil: no such login (never was, ended, or timed out).
    case identity(call: UInt64, identity: WebIdentity?)
    /// A watch's end: the changes' count when something changed (or at once), nil when nothing
    /// did in time or deskd has as many watches as it keeps; `loggedIn` false: the login has ended.
    /// `account`: the login's uid (the front bounds a login's and an account's event streams).
    case watched(call: UInt64, generation: UInt64?, loggedIn: Bool, account: UInt32?)
    /// The control protocol's response JSON, and the HTTP status it maps to.
    case answered(call: UInt64, status: Int, body: String)
}

/// The records' encoding: JSON, one message per record.
public enum FrontWire {
    /// The most a front's message may be; deskd drops a front that sends more. A token or a
    /// cookie is under a hundred bytes, counts a few hundred; a portal request's body (16 KiB)
    /// escaped as a JSON string can grow up to six times. The front refuses to send more itself.
    public static let requestLimit = 128 << 10
    /// The most one of deskd's messages may be: the metrics text and the TLS chain fit well within.
    public static let eventLimit = 1 << 20

    public static func encode<T: Encodable>(_ message: T) -> [UInt8] {
        // Encoding these types cannot fail: no floats, no custom encoders.
        (try? Array(JSONEncoder().encode(message))) ?? []
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}
