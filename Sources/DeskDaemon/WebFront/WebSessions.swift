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
        /// Logged in through the site's proxy: no password here to have changed.
        let singleSignOn: Bool
        /// The account's password as it stood at the login: a lock, an expiry or a new password
        /// since ends the login (`WebPortal.check`). nil: no shadow entry to watch.
        let password: PasswordState?
        let began: ContinuousClock.Instant
        var lastSeen: ContinuousClock.Instant
    }

    private let logins = Mutex<[String: Login]>([:])
    /// More than this at once and the oldest goes: memory for logins is bounded.
    static let capacity = 10_000
    /// Logins of one account at once: its 33rd ends its oldest, never another account's.
    static let perAccount = 32

    /// A new login for `account`; its cookie.
    func open(_ account: UserAccount, singleSignOn: Bool = false, password: PasswordState? = nil,
              now: ContinuousClock.Instant = .now) -> (cookie: String, login: Login) {
        let cookie = BrowserLinks.randomToken() + BrowserLinks.randomToken()
        let login = Login(uid: account.uid, gid: account.gid, user: account.name, csrf: BrowserLinks.randomToken(),
                          singleSignOn: singleSignOn, password: password, began: now, lastSeen: now)
        logins.withLock { logins in
            let own = logins.filter { $0.value.uid == account.uid }
            if own.count >= Self.perAccount, let oldest = own.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                logins[oldest] = nil
            }
            if logins.count >= Self.capacity, let oldest = logins.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                logins[oldest] = nil
            }
            logins[cookie] = login
        }
        return (cookie, login)
    }

    /// The login `cookie` is, if it has neither idled out nor outlived its lifetime, and `stillAllowed`
    /// says its account may still log in (then it is gone); with `touch`, its idle clock starts again.
    /// `stillAllowed` reads the account database, so it runs outside the lock.
    func check(_ cookie: String, idle: Duration, lifetime: Duration, touch: Bool, now: ContinuousClock.Instant = .now,
               stillAllowed: (Login) -> Bool = { _ in true }) -> Login? {
        let alive = logins.withLock { logins -> Login? in
            guard let login = logins[cookie] else { return nil }
            guard now - login.lastSeen < idle, now - login.began < lifetime else {
                logins[cookie] = nil
                return nil
            }
            return login
        }
        guard let alive else { return nil }
        guard stillAllowed(alive) else {
            close(cookie)
            return nil
        }
        guard touch else { return alive }
        self.touch(cookie, now: now)
        var touched = alive
        touched.lastSeen = now
        return touched
    }

    /// The account `cookie` is a login of, alive or not (nothing is checked or touched).
    func user(of cookie: String) -> String? {
        logins.withLock { $0[cookie]?.user }
    }

    @discardableResult
    func close(_ cookie: String) -> Login? {
        logins.withLock { $0.removeValue(forKey: cookie) }
    }

    /// Starts `cookie`'s idle clock again (a request that counts as activity, already checked).
    func touch(_ cookie: String, now: ContinuousClock.Instant = .now) {
        logins.withLock { $0[cookie]?.lastSeen = now }
    }
}

/// Failed portal logins, so a password cannot be guessed at speed: per browser address and per
/// account. Five failures from an address, or ten against an account, in ten minutes make it
/// wait, doubling from 30 s to 15 min; a success clears nothing (failures age out). More than
/// 60 failures a minute from everywhere make every address that has failed at all wait a
/// minute, so a flood from many addresses cannot lock out those who never mistyped.
final class LoginThrottle: Sendable {
    private struct State {
        var failures: [String: [ContinuousClock.Instant]] = [:]
        var everywhere: [ContinuousClock.Instant] = []
    }

    private let state = Mutex(State())
    static let window: Duration = .seconds(600)
    static let freeFailuresPerAddress = 5
    static let freeFailuresPerAccount = 10
    static let totalPerMinute = 60

    /// How long an attempt from `address` at `user` must wait; nil: it may try now.
    func wait(address: String, user: String, now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { state in
            state.everywhere.removeAll { now - $0 > .seconds(60) }
            let fromAddress = Self.recent(&state, "address:" + address, now: now)
            if state.everywhere.count > Self.totalPerMinute, !fromAddress.isEmpty, let first = state.everywhere.first {
                return .seconds(60) - (now - first)
            }
            let atUser = Self.recent(&state, "user:" + user, now: now)
            return [Self.penalty(fromAddress, free: Self.freeFailuresPerAddress, now: now),
                    Self.penalty(atUser, free: Self.freeFailuresPerAccount, now: now)].compactMap { $0 }.max()
        }
    }

    private static func recent(_ state: inout State, _ key: String, now: ContinuousClock.Instant) -> [ContinuousClock.Instant] {
        let recent = (state.failures[key] ?? []).filter { now - $0 < window }
        state.failures[key] = recent.isEmpty ? nil : recent
        return recent
    }

    private static func penalty(_ recent: [ContinuousClock.Instant], free: Int, now: ContinuousClock.Instant) -> Duration? {
        guard recent.count >= free, let last = recent.last else { return nil }
        let penalty = min(Duration.seconds(30) * (1 << min(recent.count - free, 5)), .seconds(900))
        let remaining = penalty - (now - last)
        return remaining > .zero ? remaining : nil
    }

    /// Counted at the start of every attempt (so a burst of attempts at once counts in full);
    /// `succeeded` takes the one back.
    func attempted(address: String, user: String, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            for key in ["address:" + address, "user:" + user] {
                state.failures[key, default: []].append(now)
                // Bounded: a key keeps its last 64 failures; at most 10,000 keys are kept.
                if state.failures[key]!.count > 64 { state.failures[key]!.removeFirst() }
            }
            state.everywhere.append(now)
            if state.everywhere.count > 4 * Self.totalPerMinute { state.everywhere.removeFirst() }
            while state.failures.count > 10_000, let stale = state.failures.min(by: { ($0.value.last ?? now) < ($1.value.last ?? now) })?.key {
                state.failures[stale] = nil
            }
        }
    }

    /// The attempt's provisional failure taken back: it was not one.
    func succeeded(address: String, user: String) {
        state.withLock { state in
            for key in ["address:" + address, "user:" + user] {
                if !(state.failures[key]?.isEmpty ?? true) { state.failures[key]!.removeLast() }
            }
            if !state.everywhere.isEmpty { state.everywhere.removeLast() }
        }
    }
}
