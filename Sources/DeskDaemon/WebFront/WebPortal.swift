import DeskCore
import DeskFrontProtocol
import DeskHost
import DeskLinux
import FoundationEssentials
import Logging
import Synchronization

/// deskd's side of the web portal: logins through PAM (in deskd-auth, one process per login,
/// never in deskd), the logins' cookies (`WebSessions`), the throttle, and a logged-in page's
/// requests, which go through the control protocol's harness exactly as deskctl's do, as the
/// logged-in user: the same verbs, the same checks, the same answers and the same audit.
actor WebPortal {
    let service: SessionService
    let harness: ControlHarness
    let sessions = WebSessions()
    let throttle = LoginThrottle()
    let slots = LoginSlots()
    private var attempts: [String: Attempt] = [:]
    private let logger: Logger

    /// A login waiting for the user's answer to a further question.
    private struct Attempt {
        let helper: AuthHelper
        let user: String
        let account: UInt32
        let peer: WebPeer
        let began: ContinuousClock.Instant
    }

    /// Logins waiting for the page's answer to a question (each is a process): in all, and for
    /// one client or one account (a PAM stack that asks for a one-time code even after a wrong
    /// password would otherwise let anyone fill them).
    static let maxAttempts = 32
    static let maxAttemptsPerClient = 2
    static let maxAttemptsPerAccount = 2
    /// How long a question may wait for its answer.
    static let answerWait: Duration = .seconds(180)
    /// How long deskd-auth may take between lines (a PAM module's delay on failure is seconds).
    static let lineWait: Duration = .seconds(30)
    /// How long a login for a name that is no account takes to be refused: about what pam_unix's
    /// delay on failure takes (2 s, give or take a quarter), so the answer's time tells no more
    /// than its words that no such account exists; it holds no slot and runs no process.
    static let noAccountDelay: ClosedRange<Double> = 1.5...2.5
    static let service = "deskd-web"
    static let wrongPassword = "The user name or password is wrong."
    static let busy = "deskd is busy with other logins (or another of yours); try again in a moment."

    init(service: SessionService, harness: ControlHarness, logger: Logger) {
        self.service = service
        self.harness = harness
        self.logger = logger
    }

    private var settings: WebSettings { service.configuration.web }
    private var idle: Duration { .seconds(settings.sessionIdleSeconds) }
    private var lifetime: Duration { .seconds(settings.sessionLifetimeSeconds) }

    // MARK: Logging in

    func login(user: String, password: String, from peer: WebPeer) async -> LoginStep {
        expireAttempts()
        // A client that must wait is refused before the account database is asked: a flood of
        // names must not become a flood of lookups in a directory (LDAP, sssd).
        if let wait = throttle.wait(client: peer.client, account: nil) { return throttled(user: user, uid: nil, peer: peer, wait: wait) }
        // The account tried, by uid: every spelling the account database accepts for it is one account.
        let account = Self.isPlausibleName(user) ? UserAccount.named(user) : nil
        if let wait = throttle.wait(client: peer.client, account: account?.uid) { return throttled(user: user, uid: account?.uid, peer: peer, wait: wait) }
        guard let account else {
            // No PAM, no slot, no key of its own in the throttle: the sender's failure, after
            // the time a wrong password takes.
            throttle.attempted(client: peer.client, account: nil)
            try? await Task.sleep(for: .seconds(Double.random(in: Self.noAccountDelay)))
            return refused(user: user, uid: nil, peer: peer, why: "no such account", message: Self.wrongPassword)
        }
        if settings.denyUsers.contains(user) || settings.denyUsers.contains(account.name) {
            throttle.attempted(client: peer.client, account: account.uid)
            return refused(user: user, uid: account.uid, peer: peer, why: "denied by web.deny_users",
                           message: "\(user) may not log in to the portal (web.deny_users); log in as yourself.")
        }
        guard let program = AuthHelper.locate() else {
            logger.error("deskd-auth is not beside deskd (nor in ../libexec/deskd): no portal login can succeed; reinstall deskd")
            return .refused(message: "Logins are not possible on this host now (deskd-auth is missing); tell an admin.")
        }
        // A slot: one per client, two per account, `LoginSlots.Limits.total` in all, after a short wait at most.
        let holder = LoginSlots.Holder(client: peer.client, account: account.uid)
        guard await slots.acquire(holder) else { return .refused(message: Self.busy) }
        defer { slots.release(holder) }
        let helper: AuthHelper
        do { helper = try AuthHelper.start(program: program, service: Self.service, user: user, remoteHost: peer.address) } catch {
            logger.error("deskd-auth could not be started", metadata: ["error": "\(error)"])
            return .refused(message: "deskd could not start the login; tell an admin.")
        }
        // Counted as a failure until it succeeds: a burst of attempts at once counts in full.
        throttle.attempted(client: peer.client, account: account.uid)
        return await drive(helper, user: user, account: account.uid, peer: peer, password: password, answer: nil, began: .now)
    }

    private func throttled(user: String, uid: UInt32?, peer: WebPeer, wait: Duration) -> LoginStep {
        audit(user: user, uid: uid, peer: peer, ok: false, outcome: "throttled")
        return .refused(message: "Too many failed logins from your address or for this account; wait \(max(1, Int(wait.components.seconds))) s and try again.")
    }

    func answer(attempt id: String, text: String, from peer: WebPeer) async -> LoginStep {
        expireAttempts()
        guard let attempt = attempts[id], attempt.peer.client == peer.client else {
            return .refused(message: "That login has timed out; start again.")
        }
        attempts[id] = nil
        let holder = LoginSlots.Holder(client: peer.client, account: attempt.account)
        guard await slots.acquire(holder) else {
            attempt.helper.end()
            return .refused(message: Self.busy)
        }
        defer { slots.release(holder) }
        return await drive(attempt.helper, user: attempt.user, account: attempt.account, peer: peer, password: nil, answer: text, began: attempt.began)
    }

    /// Answers deskd-auth's pending question with `answer` (a page's answer to a question it
    /// was shown), or its first question with `password` (the login form's), then reads until it
    /// asks something more (a question for the page) or ends.
    private func drive(_ helper: AuthHelper, user: String, account uid: UInt32, peer: WebPeer, password: String?, answer: String?,
                       began: ContinuousClock.Instant) async -> LoginStep {
        // deskd-auth answers when PAM does (a slow directory, a delay after a wrong password).
        let outcome = await onDedicatedThread { () -> AuthOutcome in
            var messages: [String] = []
            /// What modules said as errors (pam_unix's "Your account has expired", only once the
            /// password was right): the refusal's sentence, where there is one.
            var errors: [String] = []
            if let answer, !helper.answer(answer) { return .silent }
            var passwordGiven = password == nil
            while true {
                guard let line = helper.nextLine(until: .now + Self.lineWait) else { return .silent }
                switch line {
                case .prompt(let text, let echo):
                    // The first question of a login is the password's, which the form asked already.
                    if !passwordGiven, let password {
                        passwordGiven = true
                        guard helper.answer(password) else { return .silent }
                        continue
                    }
                    return .question(text, echo: echo, messages)
                case .info(let text):
                    if messages.count < 16 { messages.append(String(text.prefix(512))) }
                case .error(let text):
                    if messages.count < 16 { messages.append(String(text.prefix(512))) }
                    errors.append(String(text.prefix(512)))
                case .succeeded:
                    return .succeeded
                case .refused(let code, let words):
                    return .refused(code: code, words: words, said: errors.last)
                }
            }
        }
        switch outcome {
        case .question(let text, let echo, let messages):
            guard attempts.count < Self.maxAttempts,
                  attempts.values.count(where: { $0.peer.client == peer.client }) < Self.maxAttemptsPerClient,
                  attempts.values.count(where: { $0.account == uid }) < Self.maxAttemptsPerAccount else {
                helper.end()
                return .refused(message: "deskd is busy with other logins (or another of yours waits for an answer); try again in a moment.")
            }
            let id = BrowserLinks.randomToken()
            attempts[id] = Attempt(helper: helper, user: user, account: uid, peer: peer, began: began)
            return .question(attempt: id, text: String(text.prefix(512)), echo: echo, messages: messages)
        case .succeeded:
            helper.end()
            // The account PAM let in, as the account database names it: the deny list is checked
            // against that name too (a case-insensitive directory could spell it otherwise).
            guard let account = UserAccount.named(user), account.uid == uid, account.uid != 0, !settings.denyUsers.contains(account.name) else {
                return refused(user: user, uid: uid, peer: peer, why: "PAM accepted a name that is no account here, or a denied one", message: Self.wrongPassword)
            }
            throttle.succeeded(client: peer.client, account: uid)
            let (cookie, login) = sessions.open(account, password: PasswordState.of(account: account.name))
            audit(user: account.name, uid: account.uid, peer: peer, ok: true, outcome: "logged in")
            logger.notice("portal login", metadata: ["session.user": "\(account.name)", "web.address": "\(peer.address)"])
            return .loggedIn(cookie: cookie, identity: identity(login))
        case .refused(let code, let words, let said):
            helper.end()
            return refused(user: user, uid: uid, peer: peer, why: "PAM \(code): \(words)", message: Self.sentence(code: code, words: words, said: said))
        case .silent:
            helper.end()
            return refused(user: user, uid: uid, peer: peer, why: "deskd-auth said nothing", message: "The login did not complete; try again.")
        }
    }

    private enum AuthOutcome: Sendable {
        case question(String, echo: Bool, [String])
        case succeeded
        case refused(code: Int32, words: String, said: String?)
        case silent
    }

    /// What a refused login is told: the same sentence for a wrong password and an unknown
    /// account (a guess learns nothing); the account's own state only once its password was right.
    static func sentence(code: Int32, words: String, said: String? = nil) -> String {
        // A module that said why (an expired account, a lock after failures) is believed over
        // PAM's code: pam_unix says "expired" only to the right password.
        if let said, !said.isEmpty, code != 13 { return "This account may not log in: \(said)" }
        return switch code {
        case 13: "This account has expired; ask an admin to renew it."                        // PAM_ACCT_EXPIRED
        case 12, 20: "The password must be changed, and the change did not succeed: \(words)"   // NEW_AUTHTOK_REQD, AUTHTOK_ERR
        case 6: "This account may not log in here: \(words)"                                   // PAM_PERM_DENIED
        default: wrongPassword                                                                 // AUTH_ERR, USER_UNKNOWN, MAXTRIES...
        }
    }

    private func refused(user: String, uid: UInt32?, peer: WebPeer, why: String, message: String) -> LoginStep {
        audit(user: user, uid: uid, peer: peer, ok: false, outcome: "refused")
        logger.notice("portal login refused", metadata: ["session.user": "\(Self.isPlausibleName(user) ? user : "?")", "web.address": "\(peer.address)", "reason": "\(why)"])
        return .refused(message: message)
    }

    private func expireAttempts(now: ContinuousClock.Instant = .now) {
        for (id, attempt) in attempts where now - attempt.began > Self.answerWait {
            attempt.helper.end()
            attempts[id] = nil
        }
    }

    /// An account name as useradd allows them: no spaces, no control characters, not long.
    static func isPlausibleName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && !name.hasPrefix("-")
            && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-$".unicodeScalars.contains($0)) }
    }

    // MARK: Single sign-on

    /// A login the site's reverse proxy vouches for: its sign-on (OIDC, SAML) named `user` in
    /// `web.sso_header`. Believed only from a proxy `web.trusted_proxies` names (the front checked
    /// its peer, and deskd checks the name again against its own list), for an account that
    /// exists here, is not root and not denied, and has not expired.
    func singleSignOn(user: String, proxy: String, from peer: WebPeer) -> LoginStep {
        guard settings.singleSignOnHeader != nil, settings.trustedProxies.contains(proxy) else {
            logger.warning("single sign-on refused: the front named a proxy deskd does not trust, or single sign-on is off",
                           metadata: ["web.proxy": "\(proxy)"])
            return .refused(message: "Single sign-on is not on for this address; log in with your password.")
        }
        guard Self.isPlausibleName(user), let account = UserAccount.named(user), account.uid != 0,
              !settings.denyUsers.contains(user), !settings.denyUsers.contains(account.name) else {
            return refused(user: user, uid: nil, peer: peer, why: "single sign-on named no account here, or a denied one",
                           message: "Your site's sign-on named \(Self.isPlausibleName(user) ? user : "an account") that may not use this portal; ask an admin.")
        }
        if let password = PasswordState.of(account: account.name), password.hasExpired(onDay: PasswordState.today) {
            return refused(user: user, uid: account.uid, peer: peer, why: "account expired", message: "This account has expired; ask an admin to renew it.")
        }
        let (cookie, login) = sessions.open(account, singleSignOn: true)
        audit(user: account.name, uid: account.uid, peer: peer, ok: true, outcome: "logged in by single sign-on via \(proxy)")
        logger.notice("portal login by single sign-on", metadata: ["session.user": "\(account.name)", "web.address": "\(peer.address)", "web.proxy": "\(proxy)"])
        return .loggedIn(cookie: cookie, identity: identity(login))
    }

    // MARK: Logged in

    func identify(cookie: String, touch: Bool) -> WebIdentity? {
        expireAttempts()
        return check(cookie, touch: touch).map(identity)
    }

    /// The login, if it is alive and its account may still log in: the same uid under the same
    /// name, not since put on the deny list, and its password neither locked nor changed nor the
    /// account expired since (a user who changes a password they think was seen ends every
    /// login made with it, as an admin's lock does).
    /// With `signedOn` (the user a trusted proxy names for the browser), a login of anyone else is none.
    /// The login a file call is made as: its cookie's, while it lives (a transfer is activity),
    /// and for a call that writes only with the page's own token (`csrf`).
    func fileCaller(cookie: String, csrf: String?, writes: Bool, signedOn: String?) -> WebSessions.Login? {
        guard let login = check(cookie, touch: false, signedOn: signedOn) else { return nil }
        if writes, csrf != login.csrf { return nil }
        sessions.touch(cookie)
        return login
    }

    private func check(_ cookie: String, touch: Bool, signedOn: String? = nil) -> WebSessions.Login? {
        let denied = settings.denyUsers
        if let signedOn, sessions.user(of: cookie) != signedOn { return nil }
        return sessions.check(cookie, idle: idle, lifetime: lifetime, touch: touch) { login in
            UserAccount.withUID(login.uid)?.name == login.user && !denied.contains(login.user)
                && Self.passwordStillHolds(for: login, now: PasswordState.of(account: login.user))
        }
    }

    static func passwordStillHolds(for login: WebSessions.Login, now: PasswordState?, today: Int = PasswordState.today) -> Bool {
        guard let now else { return login.password == nil }
        if now.hasExpired(onDay: today) { return false }
        // A single sign-on login had no password here: only the account's expiry is its business.
        if login.singleSignOn { return true }
        // A lock (usermod -L, passwd -l) prefixes the stored hash, so the fingerprint changes with
        // it; an entry that was "!" or "*" already (an account PAM authenticates elsewhere,
        // Kerberos or LDAP) keeps its login while it stays so.
        return now.fingerprint == login.password?.fingerprint
    }

    /// The account a browser's portal cookie is logged in as, for a link for named accounts
    /// (which does not count as the login's activity). `signedOn`: the user a trusted proxy names
    /// for the browser now; a login of anyone else is none.
    func viewer(cookie: String, signedOn: String? = nil) -> UInt32? {
        check(cookie, touch: false, signedOn: signedOn)?.uid
    }

    /// How long a page's live update waits for a change before it is answered "nothing yet".
    static let watchWait: Duration = .seconds(25)

    /// A page's live update: the changes' count once it passes `after` (nil: now), or nil after
    /// `watchWait`; `loggedIn` false once the login has ended. Never touches the idle clock.
    func watch(cookie: String, after: UInt64?, signedOn: String? = nil) async -> WatchAnswer {
        guard let login = check(cookie, touch: false, signedOn: signedOn) else { return WatchAnswer(generation: nil, loggedIn: false) }
        let changes = service.environment.changes
        // An admin's page shows every user's desktops, and hears of every change.
        let audience: SessionChanges.Audience = service.isAdmin(login.uid) ? .everyone : .account(login.uid)
        guard let after else { return WatchAnswer(generation: changes.generation(for: audience), loggedIn: true, account: login.uid) }
        let generation = await changes.next(for: audience, after: after, within: Self.watchWait)
        // The login may have ended meanwhile (a logout, its idle time): the page hears that instead.
        guard check(cookie, touch: false, signedOn: signedOn) != nil else { return WatchAnswer(generation: nil, loggedIn: false) }
        return WatchAnswer(generation: generation, loggedIn: true, account: login.uid)
    }

    func logout(cookie: String) {
        guard let login = sessions.close(cookie) else { return }
        // The page's live updates hear of it now, not at their next wait's end.
        service.environment.changes.bump(uid: login.uid)
        audit(user: login.user, uid: login.uid, by: login.uid, peer: nil, ok: true, outcome: "logged out")
    }

    /// A page's request, as its user: the control protocol's harness decides and audits it.
    func request(cookie: String, csrf: String, body: String, touch: Bool, signedOn: String? = nil) async -> (status: Int, body: String) {
        guard let login = check(cookie, touch: false, signedOn: signedOn) else {
            return (401, Self.errorJSON(DeskError(.permissionDenied, "Your portal login has ended; log in again.")))
        }
        guard csrf == login.csrf else {
            return (403, Self.errorJSON(DeskError(.permissionDenied, "The request did not carry this page's token; reload the page.")))
        }
        if touch { sessions.touch(cookie) }
        let response = await harness.handle(Array(body.utf8), from: PeerCredentials(pid: 0, uid: login.uid, gid: login.gid))
        let text = (try? ResponseWire.encode(response)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return (Self.status(of: response), text)
    }

    static func status(of response: Response) -> Int {
        guard let error = response.error else { return 200 }
        switch error.code {
        case .permissionDenied, .userNotAllowed: return 403
        case .noSuchSession: return 404
        case .internalError: return 500
        default: return 400
        }
    }

    static func errorJSON(_ error: DeskError) -> String {
        (try? JSONEncoder.deskWire.encode(Response(error: error))).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private func identity(_ login: WebSessions.Login) -> WebIdentity {
        let now = ContinuousClock.now
        return WebIdentity(user: login.user, uid: login.uid, isAdmin: service.isAdmin(login.uid), csrf: login.csrf,
                           singleSignOn: login.singleSignOn,
                           idleSeconds: max(0, Int((idle - (now - login.lastSeen)).components.seconds)),
                           lifetimeSeconds: max(0, Int((lifetime - (now - login.began)).components.seconds)))
    }

    /// A portal login's entry: the account tried in `user` and `uid`, never as the caller (a
    /// browser before its login is no one; a refusal must not spend that account's allowance),
    /// the browser's address in `detail`, and the allowance its client's own (`AuditLimiter`).
    /// `by`: the caller, for what a logged-in page did (a logout). A login that succeeded is
    /// always recorded; refusals go through the rate limit.
    private func audit(user: String, uid: UInt32?, by caller: UInt32? = nil, peer: WebPeer?, ok: Bool, outcome: String) {
        let shown = Self.isPlausibleName(user) ? user : "?"
        let entry = AuditEntry(time: Date(), peerUID: caller, peerPID: 0, peerUser: caller == nil ? nil : shown,
                               command: ok && outcome == "logged out" ? .logout : .login,
                               user: shown, uid: uid, display: nil, detail: peer.map { "web from \($0.address)" }, ok: ok, outcome: outcome)
        service.audit.record(entry, alwaysKept: ok, client: peer?.client)
    }
}
