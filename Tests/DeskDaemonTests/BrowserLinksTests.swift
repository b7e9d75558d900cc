@testable import DeskDaemon
import DeskCore
import FoundationEssentials
import Testing

/// One-time links: a token opens once, within its time, for the session it names; its cookie
/// is spent once; a caller cannot pile up links.
@Suite struct BrowserLinksTests {
    static let grant = BrowserLinks.Grant(sessionID: String(repeating: "ab", count: 16), display: Display(3), owner: 1001, issuedTo: 1001, viewOnly: false)

    @Test func aTokenIsTradedOnceAndItsCookieSpentOnce() throws {
        let links = BrowserLinks()
        let token = try links.mint(Self.grant, ttl: .seconds(60))
        let traded = try #require(links.exchange(token: token))
        #expect(traded.grant == Self.grant)
        #expect(links.exchange(token: token) == nil, "a token opens once")
        #expect(links.redeem(cookie: traded.cookie)?.grant == Self.grant)
        #expect(links.redeem(cookie: traded.cookie) == nil, "a cookie is spent once")
        #expect(links.redeem(cookie: token) == nil, "a token is no cookie")
    }

    @Test func anExpiredTokenOrCookieOpensNothing() throws {
        let links = BrowserLinks()
        let start = ContinuousClock.now
        let token = try links.mint(Self.grant, ttl: .seconds(10), now: start)
        #expect(links.exchange(token: token, now: start + .seconds(11)) == nil)
        let other = try links.mint(Self.grant, ttl: .seconds(10), now: start)
        let traded = try #require(links.exchange(token: other, now: start + .seconds(1)))
        #expect(links.redeem(cookie: traded.cookie, now: start + .seconds(1) + BrowserLinks.cookieLifetime + .seconds(1)) == nil)
    }

    @Test func tokensAre256RandomBitsInBase64URL() throws {
        let tokens = (0..<200).map { _ in BrowserLinks.randomToken() }
        #expect(Set(tokens).count == tokens.count)
        #expect(tokens.allSatisfy { $0.utf8.count == 43 && $0.utf8.allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 45 || byte == 95 } })
    }

    @Test func oneCallerCannotPileUpLinks() throws {
        let links = BrowserLinks()
        for _ in 0..<BrowserLinks.outstandingPerCaller { _ = try links.mint(Self.grant, ttl: .seconds(60)) }
        #expect { try links.mint(Self.grant, ttl: .seconds(60)) } throws: { ($0 as? DeskError)?.code == .limitReached }
        // start --web asks the same before it starts a desktop it could not link to.
        #expect { try links.checkRoom(for: 1001) } throws: { ($0 as? DeskError)?.code == .limitReached }
        var other = Self.grant
        other.issuedTo = 1002
        try links.checkRoom(for: 1002)
        _ = try links.mint(other, ttl: .seconds(60))
        #expect(links.outstanding() == BrowserLinks.outstandingPerCaller + 1)
        #expect(links.outstanding(now: .now + .seconds(61)) == 0, "expired links are not outstanding")
    }

    /// `url --revoke`, `passwd` and a session's end: unused tokens and unspent cookies of the
    /// session go (view-only ones only, for a new view-only password); other sessions' stay.
    @Test func revokingASessionsLinksVoidsItsTokensAndCookiesOnly() throws {
        let links = BrowserLinks()
        var watch = Self.grant
        watch.viewOnly = true
        var elsewhere = Self.grant
        elsewhere.sessionID = String(repeating: "cd", count: 16)
        let full = try links.mint(Self.grant, ttl: .seconds(60))
        let opened = try #require(links.exchange(token: try links.mint(Self.grant, ttl: .seconds(60))))
        let watching = try links.mint(watch, ttl: .seconds(60))
        let other = try links.mint(elsewhere, ttl: .seconds(60))

        #expect(links.revoke(sessionID: Self.grant.sessionID, viewOnlyOnly: true) == 1)
        #expect(links.exchange(token: watching) == nil)
        #expect(links.revoke(sessionID: Self.grant.sessionID) == 2, "the unused link and the unspent cookie")
        #expect(links.exchange(token: full) == nil)
        #expect(links.redeem(cookie: opened.cookie) == nil)
        #expect(links.exchange(token: other)?.grant == elsewhere, "another session's link is untouched")
    }

    /// A cookie spent before a revoke, whose browser was still connecting when it came, is
    /// revoked once it asks: the epoch it was spent at is no longer the session's.
    @Test func aCookieSpentBeforeARevokeIsRevokedWhenItsRelayAsks() throws {
        let links = BrowserLinks()
        var watch = Self.grant
        watch.viewOnly = true
        func spent(_ grant: BrowserLinks.Grant) throws -> (grant: BrowserLinks.Grant, epoch: UInt64) {
            let traded = try #require(links.exchange(token: try links.mint(grant, ttl: .seconds(60))))
            return try #require(links.redeem(cookie: traded.cookie))
        }
        let full = try spent(Self.grant)
        let viewer = try spent(watch)
        let id = Self.grant.sessionID
        #expect(!links.isRevoked(sessionID: id, viewOnly: false, since: full.epoch))
        links.revoke(sessionID: id, viewOnlyOnly: true)
        #expect(links.isRevoked(sessionID: id, viewOnly: true, since: viewer.epoch))
        #expect(!links.isRevoked(sessionID: id, viewOnly: false, since: full.epoch), "a view-only revoke leaves full links be")
        links.revoke(sessionID: id)
        #expect(links.isRevoked(sessionID: id, viewOnly: false, since: full.epoch))
    }

    @Test func aLinkForNamedAccountsOpensOnlyForOneOfThemAndStaysForThem() throws {
        let links = BrowserLinks()
        var grant = Self.grant
        grant.viewOnly = true
        grant.viewers = [2002, 2003]
        let token = try links.mint(grant, ttl: .seconds(60))
        #expect(links.exchange(token: token, viewer: nil) == .forNamedViewers, "a browser not logged in")
        #expect(links.exchange(token: token, viewer: 1001) == .forNamedViewers, "the owner is not one of them")
        #expect(links.exchange(token: token, viewer: 4004) == .forNamedViewers)
        guard case .granted(_, let traded) = links.exchange(token: token, viewer: 2003) else {
            Issue.record("one of the named accounts was refused")
            return
        }
        #expect(traded.share == grant.share && traded.viewOnly)
        #expect(links.exchange(token: token, viewer: 2002) == .refused, "and then it is used")
    }

    @Test func oneShareIsTakenBackAndTheOthersStay() throws {
        let links = BrowserLinks()
        let id = Self.grant.sessionID
        var first = Self.grant, second = Self.grant
        first.share = BrowserLinks.randomShare()
        second.share = BrowserLinks.randomShare()
        #expect(first.share != second.share && UrlRequest.isPlausibleShare(first.share))
        let one = try links.mint(first, ttl: .seconds(60)), two = try links.mint(second, ttl: .seconds(60))
        // The first is opened (its cookie spent), the second not yet.
        let opened = try #require(links.exchange(token: one))
        let (spent, epoch) = try #require(links.redeem(cookie: opened.cookie))
        #expect(links.unused(sessionID: id).map(\.grant.share) == [second.share])
        #expect(links.revoke(sessionID: id, share: first.share) == 0, "its link was used: nothing unused to void")
        #expect(links.isRevoked(sessionID: id, viewOnly: false, since: epoch, share: spent.share), "its browser must go")
        #expect(!links.isRevoked(sessionID: id, viewOnly: false, since: epoch, share: second.share))
        #expect(links.revoke(sessionID: id, share: second.share) == 1)
        #expect(links.exchange(token: two) == nil && links.unused(sessionID: id).isEmpty)
    }

    /// Issue 41, finding 5: made-up share ids were each remembered for five minutes. Only a share
    /// issued for the session, and still held by something, is taken back and remembered.
    @Test func aMadeUpShareIsRefusedAndLeavesNothingBehind() throws {
        let links = BrowserLinks()
        let id = Self.grant.sessionID
        let token = try links.mint(Self.grant, ttl: .seconds(60))
        for _ in 0..<1000 { #expect(links.revoke(sessionID: id, share: BrowserLinks.randomShare()) == nil) }
        #expect(links.revoke(sessionID: "another-session", share: Self.grant.share) == nil, "another session's share is not this one's")
        #expect(!links.isRevoked(sessionID: id, viewOnly: false, since: 0, share: BrowserLinks.randomShare()))
        // A share whose relay is open (the caller says so) is taken back, though no link holds it.
        #expect(links.revoke(sessionID: id, share: "relay-only-1", inUse: true) == 0)
        #expect(links.isRevoked(sessionID: id, viewOnly: false, since: 0, share: "relay-only-1"))
        #expect(links.exchange(token: token) != nil, "the real link was untouched")
    }
}

extension BrowserLinks {
    /// A token traded by a browser logged in to nothing, as a cookie and its grant; nil for a
    /// token that is unknown, used, expired or for named accounts.
    func exchange(token: String, now: ContinuousClock.Instant = .now) -> (cookie: String, grant: Grant)? {
        guard case .granted(let cookie, let grant) = exchange(token: token, viewer: nil, now: now) else { return nil }
        return (cookie, grant)
    }
}
