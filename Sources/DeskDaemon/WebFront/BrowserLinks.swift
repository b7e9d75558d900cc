import DeskCore
import FoundationEssentials
import Synchronization

/// The one-time links `deskctl url` hands out, and the cookies the gateway's page trades them
/// for. In memory only: a restart of deskd voids every link, which is what a link that should
/// open once, soon, ought to do.
///
/// A link's token is 256 random bits. It opens once: the page trades it for a cookie that lives
/// a minute and is spent at the WebSocket upgrade. Both are bound to the session, to who asked
/// and to the mode; a session that ended opens nothing, whatever the token.
final class BrowserLinks: Sendable {
    struct Grant: Sendable, Equatable {
        var sessionID: String
        var display: Display
        /// The session's owner: a link its owner did not make holds only while its maker is an admin.
        var owner: UInt32
        /// The caller who asked for the link (owner or admin), for the audit trail and the census.
        var issuedTo: UInt32
        var viewOnly: Bool
        /// This link's own id, which its cookie and its browser keep: what `revoke(share:)` takes back.
        var share: String = BrowserLinks.randomShare()
        /// Only these uids may use it, each logged in to the portal in the browser that opens it;
        /// nil: whoever holds the link.
        var viewers: Set<UInt32>? = nil
        /// The names the link was made for, as its maker gave them (for `shares`).
        var viewerNames: [String]? = nil
    }

    /// What trading a token came to.
    enum Exchange: Equatable {
        case granted(cookie: String, grant: Grant)
        /// Unknown, used or expired.
        case refused
        /// A link for named accounts, and the browser is not logged in to the portal as one of
        /// them: the token stays unused, for when it is.
        case forNamedViewers
    }

    private struct Entry {
        var grant: Grant
        var expires: ContinuousClock.Instant
    }

    /// Between the page's trade and the WebSocket upgrade: seconds, not minutes.
    static let cookieLifetime: Duration = .seconds(60)
    /// How long a share taken back is remembered: a cookie lives a minute and a desktop's login
    /// takes seconds, so nothing of the share can still be on its way after this.
    static let shareRevocationMemory: Duration = .seconds(300)
    /// Unused links one caller may hold at once: a loop that mints links cannot fill memory.
    static let outstandingPerCaller = 64
    /// Shares taken back remembered at once, in all (each was issued, so this is never reached
    /// but by thousands of real links): past it, the oldest are forgotten first.
    static let revokedSharesKept = 4096

    private struct State {
        var tokens: [String: Entry] = [:]
        var cookies: [String: Entry] = [:]
        /// How many times each session's links were taken back: all of them, and the view-only
        /// ones. A cookie spent before a revoke carries the count of its time, so a browser still
        /// connecting when the revoke came is refused once it is registered (`isRevoked`).
        var revocations: [String: (all: UInt64, viewOnly: UInt64)] = [:]
        /// Shares taken back one by one, by session, and when: a cookie or relay of one of them
        /// opens nothing. Kept `shareRevocationMemory`, long past any cookie or login under way;
        /// only shares that were issued for that session, and at most `revokedSharesKept`.
        var revokedShares: [String: [String: ContinuousClock.Instant]] = [:]
        /// Cookies spent in the last `shareRevocationMemory`, by share and session: between its
        /// redeem and its relay's registration a share is in neither table, and a revoke then
        /// must still be remembered.
        var spent: [String: (sessionID: String, at: ContinuousClock.Instant)] = [:]

        func epoch(sessionID: String, viewOnly: Bool) -> UInt64 {
            let counts = revocations[sessionID] ?? (0, 0)
            return counts.all << 32 | (viewOnly ? counts.viewOnly & 0xFFFF_FFFF : 0)
        }
    }

    private let state = Mutex(State())

    /// A new link's token, valid for `ttl`.
    func mint(_ grant: Grant, ttl: Duration, now: ContinuousClock.Instant = .now) throws(DeskError) -> String {
        let token = Self.randomToken()
        try state.withLock { state throws(DeskError) in
            Self.prune(&state.tokens, now: now)
            Self.prune(&state.cookies, now: now)
            try Self.checkRoom(in: state.tokens, for: grant.issuedTo, now: now)
            state.tokens[token] = Entry(grant: grant, expires: now + ttl)
        }
        return token
    }

    /// Refuses, as `mint` would, a caller who holds as many unused links as deskd keeps.
    func checkRoom(for caller: UInt32, now: ContinuousClock.Instant = .now) throws(DeskError) {
        try state.withLock { state throws(DeskError) in try Self.checkRoom(in: state.tokens, for: caller, now: now) }
    }

    private static func checkRoom(in tokens: [String: Entry], for caller: UInt32, now: ContinuousClock.Instant) throws(DeskError) {
        let held = tokens.values.count { $0.grant.issuedTo == caller && $0.expires > now }
        guard held < outstandingPerCaller else {
            throw DeskError(.limitReached, "you hold \(held) unused links, the most deskd keeps per user; use one or let them expire (deskctl url --ttl) first.")
        }
    }

    /// Trades a link's token for a cookie, once, for a browser logged in to the portal as `viewer`
    /// (nil: not logged in). A link for named accounts is not spent by a browser that is none of them.
    func exchange(token: String, viewer: UInt32?, now: ContinuousClock.Instant = .now) -> Exchange {
        let cookie = Self.randomToken()
        return state.withLock { state in
            guard let entry = state.tokens[token], entry.expires > now else {
                state.tokens[token] = nil
                return .refused
            }
            if let viewers = entry.grant.viewers, !(viewer.map { viewers.contains($0) } ?? false) {
                return .forNamedViewers
            }
            state.tokens[token] = nil
            state.cookies[cookie] = Entry(grant: entry.grant, expires: now + Self.cookieLifetime)
            return .granted(cookie: cookie, grant: entry.grant)
        }
    }

    /// Spends a cookie at the WebSocket upgrade, once, with the session's revocation epoch as of
    /// that moment.
    func redeem(cookie: String, now: ContinuousClock.Instant = .now) -> (grant: Grant, epoch: UInt64)? {
        state.withLock { state in
            guard let entry = state.cookies.removeValue(forKey: cookie), entry.expires > now else { return nil }
            state.spent = state.spent.filter { now - $0.value.at < Self.shareRevocationMemory }
            state.spent[entry.grant.share] = (entry.grant.sessionID, now)
            return (entry.grant, state.epoch(sessionID: entry.grant.sessionID, viewOnly: entry.grant.viewOnly))
        }
    }

    /// Whether the session's links (of this mode) were taken back since a cookie spent at `epoch`,
    /// or this share was.
    func isRevoked(sessionID: String, viewOnly: Bool, since epoch: UInt64, share: String? = nil) -> Bool {
        state.withLock { state in
            state.epoch(sessionID: sessionID, viewOnly: viewOnly) != epoch
                || share.map { state.revokedShares[sessionID]?[$0] != nil } == true
        }
    }

    /// Takes back one share of `sessionID`: its link if unused, its cookie if not yet spent; a
    /// relay it opened is the caller's to close (`inUse`: a relay of it is open now). How many
    /// links and cookies there were (0 or 1); nil when the share is none of this session's that
    /// anything still holds, and then nothing is remembered: a made-up id costs a lookup, not memory.
    @discardableResult
    func revoke(sessionID: String, share: String, inUse: Bool = false, now: ContinuousClock.Instant = .now) -> Int? {
        state.withLock { state -> Int? in
            func holds(_ entry: Entry) -> Bool { entry.grant.sessionID == sessionID && entry.grant.share == share }
            let spent = state.spent[share].map { $0.sessionID == sessionID && now - $0.at < Self.shareRevocationMemory } ?? false
            guard inUse || spent || state.tokens.values.contains(where: holds) || state.cookies.values.contains(where: holds) else { return nil }
            // Bounded: what revokes leave is forgotten after shareRevocationMemory, and at most
            // revokedSharesKept are kept (only issued shares get here).
            for (session, shares) in state.revokedShares {
                let kept = shares.filter { now - $0.value < Self.shareRevocationMemory }
                state.revokedShares[session] = kept.isEmpty ? nil : kept
            }
            if state.revokedShares.values.reduce(0, { $0 + $1.count }) >= Self.revokedSharesKept,
               let oldest = state.revokedShares.flatMap({ session, shares in shares.map { (session, $0.key, $0.value) } }).min(by: { $0.2 < $1.2 }) {
                state.revokedShares[oldest.0]?[oldest.1] = nil
            }
            state.revokedShares[sessionID, default: [:]][share] = now
            let before = state.tokens.count + state.cookies.count
            state.tokens = state.tokens.filter { !holds($0.value) }
            state.cookies = state.cookies.filter { !holds($0.value) }
            return before - state.tokens.count - state.cookies.count
        }
    }

    /// The session's links not yet used (their grants and when they expire).
    func unused(sessionID: String, now: ContinuousClock.Instant = .now) -> [(grant: Grant, expires: ContinuousClock.Instant)] {
        state.withLock { state in
            state.tokens.values.filter { $0.grant.sessionID == sessionID && $0.expires > now }.map { ($0.grant, $0.expires) }
        }
    }

    /// A session's end: its links, cookies and counts go. (A browser still connecting to it
    /// finds no Xvnc.)
    func forget(sessionID: String) {
        state.withLock { state in
            state.tokens = state.tokens.filter { $0.value.grant.sessionID != sessionID }
            state.cookies = state.cookies.filter { $0.value.grant.sessionID != sessionID }
            state.revocations[sessionID] = nil
            state.revokedShares[sessionID] = nil
            state.spent = state.spent.filter { $0.value.sessionID != sessionID }
        }
    }

    /// Voids every link to `sessionID` not yet used, and every cookie not yet spent (a link whose
    /// page is open but whose WebSocket is not): all of them, or with `viewOnlyOnly` the view-only
    /// ones. Returns how many there were. Browsers already connected are the gateway's to close.
    @discardableResult
    func revoke(sessionID: String, viewOnlyOnly: Bool = false) -> Int {
        func voided(_ entry: Entry) -> Bool {
            entry.grant.sessionID == sessionID && (entry.grant.viewOnly || !viewOnlyOnly)
        }
        return state.withLock { state in
            let before = state.tokens.count + state.cookies.count
            var counts = state.revocations[sessionID] ?? (0, 0)
            if viewOnlyOnly { counts.viewOnly += 1 } else { counts.all += 1 }
            state.revocations[sessionID] = counts
            state.tokens = state.tokens.filter { !voided($0.value) }
            state.cookies = state.cookies.filter { !voided($0.value) }
            return before - state.tokens.count - state.cookies.count
        }
    }

    /// Links minted and neither used nor expired.
    func outstanding(now: ContinuousClock.Instant = .now) -> Int {
        state.withLock { state in state.tokens.values.count { $0.expires > now } }
    }

    private static func prune(_ entries: inout [String: Entry], now: ContinuousClock.Instant) {
        entries = entries.filter { $0.value.expires > now }
    }

    /// A share's id: 72 random bits, base64url (12 characters). Not a secret: it takes back, never opens.
    static func randomShare() -> String {
        String(randomToken().prefix(12))
    }

    /// 32 bytes from the system's CSPRNG, base64url without padding (43 characters): safe in a
    /// URL fragment and a cookie alike.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<4).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64) { Array($0) } }
        return String(Data(bytes).base64EncodedString().compactMap { character -> Character? in
            switch character {
            case "+": "-"
            case "/": "_"
            case "=": nil
            default: character
            }
        })
    }
}
