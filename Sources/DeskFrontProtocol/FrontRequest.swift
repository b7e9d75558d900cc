import DeskCore
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
    case counts(GatewayCounts.Snapshot)
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
    /// A file call of a logged-in page's, on the desktop `session` (its owner's files only):
    /// `FrontEvent.filed`, with the descriptor deskd-files opened as the user for a transfer.
    /// `csrf` is the page's token, which an upload must carry (a download is a plain link).
    case files(call: UInt64, cookie: String, csrf: String?, session: String, request: FileCall, signedOn: String?)
    /// A transfer `FrontEvent.filed` began has ended after `bytes`: deskd records it, and names
    /// a completed upload (`FrontEvent.filed` with `committed` or a refusal; nil for a download).
    case transferEnded(call: UInt64, transfer: UInt64, bytes: UInt64, outcome: TransferOutcome)
}
