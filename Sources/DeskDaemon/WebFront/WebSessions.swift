import DeskCore
import DeskFrontProtocol
import DeskHost
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

/// Failed portal logins, so a password cannot be guessed at speed: per client (`WebPeer.client`:
/// a local account, a remote address, an IPv6 /64) and per account (by uid, so every spelling a
/// directory accepts for one account is one account). Five failures from a client, or ten
/// against an account, in ten minutes make it wait, doubling from 30 s to 15 min; a success
/// clears nothing (failures age out). More than 60 failures a minute from everywhere make every
/// client that has failed at all wait a minute, so a flood from many clients cannot lock out
/// those who never mistyped.
///
/// A connection made on this host by the account being logged in to (its owner's own browser,
/// or its own `ssh -L` tunnel: the kernel names the account, `WebPeer.client` "uid:N") proves
/// more than a password does, so strangers' failures against the account never make it wait;
/// only its own client's penalty applies, and its own failures count against that client alone.
/// Everyone else, remote or through a proxy, still waits for the account's penalty
/// (docs/THREAT_MODEL.md says what that leaves a stranger).
///
/// A penalty that is running is never dropped to make room, however many other keys arrive.
/// Accounts have a table of their own, never cut (only real accounts get a key, so it is as
/// large as the attempts at real accounts, and keys age out with their failures); a name that is
/// no account costs its sender's key only. Clients' table is bounded: when it is full, the
/// oldest key with no penalty running is forgotten, and when every key has one, a new client
/// waits (its attempt is refused, not let through uncounted).
final class LoginThrottle: Sendable {
    private struct State {
        var clients: [String: [ContinuousClock.Instant]] = [:]
        var accounts: [UInt32: [ContinuousClock.Instant]] = [:]
        var everywhere: [ContinuousClock.Instant] = []
    }

    private let state = Mutex(State())
    let capacity: Int
    static let window: Duration = .seconds(600)
    static let freeFailuresPerClient = 5
    static let freeFailuresPerAccount = 10
    static let totalPerMinute = 60
    /// How long a new client waits when the clients' table is all running penalties.
    static let fullTableWait: Duration = .seconds(60)

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    /// How long an attempt from `client` at `account` (nil: a name that is no account) must
    /// wait; nil: it may try now.
    func wait(client: String, account: UInt32?, now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { state in
            state.everywhere.removeAll { now - $0 > .seconds(60) }
            let fromClient = Self.recent(&state.clients, client, now: now)
            if state.everywhere.count > Self.totalPerMinute, !fromClient.isEmpty, let first = state.everywhere.first {
                return .seconds(60) - (now - first)
            }
            if state.clients[client] == nil, state.clients.count >= capacity, Self.stalestClient(state.clients, now: now) == nil {
                return Self.fullTableWait
            }
            let atAccount = account.map { Self.isOwn(client: client, account: $0) ? [] : Self.recent(&state.accounts, $0, now: now) } ?? []
            return [Self.penalty(fromClient, free: Self.freeFailuresPerClient, now: now),
                    Self.penalty(atAccount, free: Self.freeFailuresPerAccount, now: now)].compactMap { $0 }.max()
        }
    }

    private static func recent<Key: Hashable>(_ table: inout [Key: [ContinuousClock.Instant]], _ key: Key, now: ContinuousClock.Instant) -> [ContinuousClock.Instant] {
        let recent = (table[key] ?? []).filter { now - $0 < window }
        table[key] = recent.isEmpty ? nil : recent
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
    func attempted(client: String, account: UInt32?, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if state.clients[client] == nil, state.clients.count >= capacity, let stale = Self.stalestClient(state.clients, now: now) {
                state.clients[stale] = nil
            }
            if state.clients[client] != nil || state.clients.count < capacity {
                Self.append(now, to: &state.clients[client, default: []])
            }
            if let account, !Self.isOwn(client: client, account: account) {
                Self.append(now, to: &state.accounts[account, default: []])
                // Accounts whose failures have all aged out go; a running penalty never does.
                if state.accounts.count > capacity {
                    state.accounts = state.accounts.filter { now - ($0.value.last ?? now) < Self.window }
                }
            }
            state.everywhere.append(now)
            if state.everywhere.count > 4 * Self.totalPerMinute { state.everywhere.removeFirst() }
        }
    }

    /// Whether `client` is a connection the kernel says `account` made on this host.
    static func isOwn(client: String, account: UInt32) -> Bool {
        client == "uid:\(account)"
    }

    /// A key keeps its last 64 failures.
    private static func append(_ now: ContinuousClock.Instant, to failures: inout [ContinuousClock.Instant]) {
        failures.append(now)
        if failures.count > 64 { failures.removeFirst() }
    }

    /// The client to forget for room: among those with no penalty running, the one whose last
    /// failure is the oldest; nil if every client has a penalty running.
    private static func stalestClient(_ clients: [String: [ContinuousClock.Instant]], now: ContinuousClock.Instant) -> String? {
        var stale: (key: String, last: ContinuousClock.Instant)?
        for (key, failures) in clients {
            if penalty(failures.filter { now - $0 < window }, free: freeFailuresPerClient, now: now) != nil { continue }
            let last = failures.last ?? now
            if stale == nil || last < stale!.last { stale = (key, last) }
        }
        return stale?.key
    }

    /// The attempt's provisional failure taken back: it was not one.
    func succeeded(client: String, account: UInt32?) {
        state.withLock { state in
            if !(state.clients[client]?.isEmpty ?? true) { state.clients[client]!.removeLast() }
            if let account, !Self.isOwn(client: client, account: account), !(state.accounts[account]?.isEmpty ?? true) {
                state.accounts[account]!.removeLast()
            }
            if !state.everywhere.isEmpty { state.everywhere.removeLast() }
        }
    }

    /// Keys held now, clients and accounts (for tests and the bound).
    var keys: (clients: Int, accounts: Int) { state.withLock { ($0.clients.count, $0.accounts.count) } }
}
