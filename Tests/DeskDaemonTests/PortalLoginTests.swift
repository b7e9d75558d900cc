@testable import DeskDaemon
import DeskHost
import DeskLinux
import Testing

/// When a portal login outlives what its password was: the rules `WebPortal.check` applies at
/// every request, on the shadow database's word as deskd read it at the login and reads it now.
@Suite("Portal logins and their passwords")
struct PortalLoginTests {
    static let today = 20_000

    func login(singleSignOn: Bool = false, password: PasswordState?) -> WebSessions.Login {
        WebSessions.Login(uid: 1000, gid: 1000, user: "alice", csrf: "c", singleSignOn: singleSignOn, password: password,
                          began: .now, lastSeen: .now)
    }

    /// The shadow entry as a fingerprint of its hash field: a locked or "*" entry is one more hash field.
    func state(fingerprint: UInt64 = 1, expires: Int? = nil) -> PasswordState {
        PasswordState(expiresOnDay: expires, fingerprint: fingerprint)
    }

    @Test func anUnchangedPasswordKeepsItsLogin() {
        #expect(WebPortal.passwordStillHolds(for: login(password: state()), now: state(), today: Self.today))
        #expect(WebPortal.passwordStillHolds(for: login(password: state()), now: state(expires: Self.today + 1), today: Self.today))
    }

    @Test func aNewPasswordALockOrAnExpiryEndsIt() {
        let before = login(password: state(fingerprint: 1))
        #expect(!WebPortal.passwordStillHolds(for: before, now: state(fingerprint: 2), today: Self.today))
        // usermod -L puts "!" before the hash: locked, and another fingerprint.
        #expect(!WebPortal.passwordStillHolds(for: before, now: state(fingerprint: 3), today: Self.today))
        #expect(!WebPortal.passwordStillHolds(for: before, now: state(expires: Self.today), today: Self.today))
    }

    @Test func anAccountPAMAuthenticatesElsewhereKeepsItsLoginWhileItsEntryStaysAsItWas() {
        // "*" in shadow and a password Kerberos or LDAP checks: locked as shadow sees it, all along.
        let elsewhere = login(password: state(fingerprint: 7))
        #expect(WebPortal.passwordStillHolds(for: elsewhere, now: state(fingerprint: 7), today: Self.today))
    }

    @Test func aSingleSignOnLoginMindsOnlyTheAccountsExpiry() {
        let signedOn = login(singleSignOn: true, password: nil)
        #expect(WebPortal.passwordStillHolds(for: signedOn, now: state(fingerprint: 9), today: Self.today))
        #expect(!WebPortal.passwordStillHolds(for: signedOn, now: state(expires: Self.today - 1), today: Self.today))
    }

    @Test func anAccountWithoutAShadowEntryKeepsOnlyALoginThatHadNone() {
        #expect(WebPortal.passwordStillHolds(for: login(password: nil), now: nil, today: Self.today))
        // The entry vanished (the account was moved or its shadow line removed): the login ends.
        #expect(!WebPortal.passwordStillHolds(for: login(password: state()), now: nil, today: Self.today))
    }
}
