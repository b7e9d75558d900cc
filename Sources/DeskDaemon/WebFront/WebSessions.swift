import DeskCore
import DeskGateway
import DeskLinux
import Synchronization

/// Portal logins: a random cookie for each, held by deskd alone (the front only carries it
/// between the browser and deskd), with an idle timeout and an absolute lifetime, ended by
/// logout. Each has its own CSRF token, which every request that changes something must carry.
final class WebSessions: Sendable {
    struct Login: Sendable {
        let uid: UInt32
        let gid: UInt32
        let user: String
        let csrf: String
        let began: ContinuousClock.Instant
        var lastSeen: ContinuousClock.Instant
    }

    private let logins = Mutex<[String: Login]>([:])
    /// More than this at once and the oldest goes: memory for logins is bounded.
    static let capacity = 10_000

    /// A new login for `account`; its cookie.
    func open(_ account: UserAccount, now: ContinuousClock.Instant = .now) -> (cookie: String, login: Login) {
        let cookie = BrowserLinks.randomToken() + BrowserLinks.randomToken()
        let login = Login(uid: account.uid, gid: account.gid, user: account.name, csrf: BrowserLinks.randomToken(), began: now, lastSeen: now)
        logins.withLock { logins in
            if logins.count >= Self.capacity, let oldest = logins.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                logins[oldest] = nil
            }
            logins[cookie] = login
        }
        return (cookie, login)
    }

    /// The login `cookie` is, if it has neither idled out nor outlived its lifetime (then it is
    /// gone); with `touch`, its idle clock starts again.
    func check(_ cookie: String, idle: Duration, lifetime: Duration, touch: Bool, now: ContinuousClock.Instant = .now) -> Login? {
        logins.withLock { logins in
            guard let login = logins[cookie] else { return nil }
            guard now - login.lastSeen < idle, now - login.began < lifetime else {
                logins[cookie] = nil
                return nil
            }
            if touch { logins[cookie]?.lastSeen = now }
            return logins[cookie]
        }
    }

    @discardableResult
    func close(_ cookie: String) -> Login? {
        logins.withLock { $0.removeValue(forKey: cookie) }
    }

    /// Ends every login of `uid` (its account was removed or locked: a later check would fail anyway).
    func closeAll(uid: UInt32) {
        logins.withLock { logins in logins = logins.filter { $0.value.uid != uid } }
    }
}

/// Failed portal logins, so a password cannot be guessed at speed: per browser address, and in
/// all. Five failures from an address in ten minutes make it wait, doubling from 30 s to 15 min;
/// more than 60 failures in a minute from everywhere make every login wait a minute.
final class LoginThrottle: Sendable {
    private struct State {
        var failures: [String: [ContinuousClock.Instant]] = [:]
        var everywhere: [ContinuousClock.Instant] = []
    }

    private let state = Mutex(State())
    static let window: Duration = .seconds(600)
    static let freeFailures = 5
    static let totalPerMinute = 60

    /// How long `address` must wait before its next attempt; nil: it may try now.
    func wait(for address: String, now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { state in
            state.everywhere.removeAll { now - $0 > .seconds(60) }
            if state.everywhere.count > Self.totalPerMinute, let first = state.everywhere.first {
                return .seconds(60) - (now - first)
            }
            let recent = (state.failures[address] ?? []).filter { now - $0 < Self.window }
            state.failures[address] = recent.isEmpty ? nil : recent
            guard recent.count >= Self.freeFailures, let last = recent.last else { return nil }
            let penalty = min(Duration.seconds(30) * (1 << min(recent.count - Self.freeFailures, 5)), .seconds(900))
            let remaining = penalty - (now - last)
            return remaining > .zero ? remaining : nil
        }
    }

    func failed(_ address: String, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.failures[address, default: []].append(now)
            state.everywhere.append(now)
            // Bounded: an address keeps its last 64 failures; at most 10,000 addresses are kept.
            if state.failures[address]!.count > 64 { state.failures[address]!.removeFirst() }
            if state.failures.count > 10_000, let stale = state.failures.min(by: { ($0.value.last ?? now) < ($1.value.last ?? now) })?.key {
                state.failures[stale] = nil
            }
        }
    }

    func succeeded(_ address: String) {
        _ = state.withLock { $0.failures.removeValue(forKey: address) }
    }
}
