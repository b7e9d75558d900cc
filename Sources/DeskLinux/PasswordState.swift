import CDeskShims
import Glibc

/// What the shadow database says of an account's password, as root reads it: enough to tell
/// that a portal login's account was locked, expired or given a new password since it logged in.
public struct PasswordState: Sendable, Equatable {
    /// The day (since 1970) the password was last changed; nil when the database does not say.
    public let lastChange: Int?
    /// The first day the account may no longer log in; nil: never.
    public let expiresOnDay: Int?
    /// The password is locked (`passwd -l`, `usermod -L`: "!" first) or never set ("*").
    public let locked: Bool
    /// Changes whenever the stored hash does (a new password, the same day as the last too).
    public let fingerprint: UInt64

    public init(lastChange: Int?, expiresOnDay: Int?, locked: Bool, fingerprint: UInt64) {
        self.lastChange = lastChange
        self.expiresOnDay = expiresOnDay
        self.locked = locked
        self.fingerprint = fingerprint
    }

    /// The account's state, or nil when it has no shadow entry (an LDAP or SSSD account whose
    /// directory keeps no shadow map, say): then nothing about its password can be said.
    public static func of(account name: String) -> PasswordState? {
        var lastChange = -1, expire = -1
        var locked: Int32 = 0
        var fingerprint: UInt64 = 0
        guard deskd_shadow_state(name, &lastChange, &expire, &locked, &fingerprint) == 0 else { return nil }
        return PasswordState(lastChange: lastChange >= 0 ? lastChange : nil, expiresOnDay: expire >= 0 ? expire : nil,
                             locked: locked != 0, fingerprint: fingerprint)
    }

    /// Whether the account has expired by `day` (days since 1970, UTC), as pam_unix counts it.
    public func hasExpired(onDay day: Int) -> Bool {
        expiresOnDay.map { day >= $0 } ?? false
    }

    /// Today, in the shadow file's days.
    public static var today: Int { Int(time(nil)) / 86_400 }
}
