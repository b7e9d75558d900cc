import CDeskShims
import DeskLinux
import Glibc

/// What the shadow database says of an account's password, as root reads it: enough to tell
/// that a portal login's account was locked, expired or given a new password since it logged in.
public struct PasswordState: Sendable, Equatable {
    /// The first day the account may no longer log in; nil: never.
    public let expiresOnDay: Int?
    /// Changes whenever the stored hash does: a new password (the same day as the last too), and
    /// a lock (`usermod -L`, `passwd -l` put "!" before the hash).
    public let fingerprint: UInt64

    public init(expiresOnDay: Int?, fingerprint: UInt64) {
        self.expiresOnDay = expiresOnDay
        self.fingerprint = fingerprint
    }

    /// The account's state, or nil when it has no shadow entry (an LDAP or SSSD account whose
    /// directory keeps no shadow map, say): then nothing about its password can be said.
    public static func of(account name: String) -> PasswordState? {
        var expire = -1
        var fingerprint: UInt64 = 0
        guard deskd_shadow_state(name, &expire, &fingerprint) == 0 else { return nil }
        return PasswordState(expiresOnDay: expire >= 0 ? expire : nil, fingerprint: fingerprint)
    }

    /// Whether the account has expired by `day` (days since 1970, UTC), as pam_unix counts it.
    public func hasExpired(onDay day: Int) -> Bool {
        expiresOnDay.map { day >= $0 } ?? false
    }

    /// Today, in the shadow file's days.
    public static var today: Int { Int(time(nil)) / 86_400 }
}
