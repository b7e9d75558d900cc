/// The rules for acting on sessions and for which accounts may have one.
public struct AccessPolicy: Sendable {
    /// Accounts below this uid are system accounts and get no desktop.
    public var minimumUID: UInt32

    public init(minimumUID: UInt32 = 1000) {
        self.minimumUID = minimumUID
    }

    public func mayAct(_ caller: Caller, onSessionOf uid: UInt32) -> Bool {
        caller.isAdmin || caller.uid == uid
    }

    /// Refuses root and system accounts with a sentence naming the rule.
    public func checkDesktopAccount(name: String, uid: UInt32) throws(DeskError) {
        if uid == 0 {
            throw DeskError(.userNotAllowed, "deskd does not run desktops as root; start one for an ordinary user with --user NAME.")
        }
        if uid < minimumUID {
            throw DeskError(.userNotAllowed, "user \(name) (uid \(uid)) is a system account below uid \(minimumUID); desktops are for ordinary users.")
        }
    }

    /// The kernel's overflow uid (nobody): files of unmapped owners show it, and no one logs in as it.
    public static let overflowUID: UInt32 = 65534

    /// Why an account that exists cannot log in, so should get no desktop (it would die at
    /// once): a shell that refuses logins, the overflow account, a home that is not there.
    /// nil when it can. `homeExists` comes from the host; the rest from the account database.
    public static func loginProblem(name: String, uid: UInt32, shell: String, home: String, homeExists: Bool) -> DeskError? {
        let hint = "limits.require_login_shell = false lets deskd start it anyway."
        if uid == overflowUID {
            return DeskError(.userNotAllowed, "\(name) (uid \(uid)) is the overflow account, which no one logs in as; start desktops for real users. (\(hint))")
        }
        let program = shell.split(separator: "/").last.map(String.init) ?? shell
        if ["nologin", "false"].contains(program) || shell.isEmpty {
            return DeskError(.userNotAllowed, "\(name) cannot log in: their shell is \(shell.isEmpty ? "empty" : shell); an admin gives them a login shell (usermod --shell /bin/bash \(name)), or sets \(hint)")
        }
        if !homeExists {
            return DeskError(.userNotAllowed, "\(name)'s home directory \(home) does not exist; an admin creates it (mkhomedir_helper \(name)), or sets \(hint)")
        }
        return nil
    }

    /// The refusal for touching another user's session. Display owners are no secret on a
    /// shared host (lock files and `ps` show them), so saying so plainly costs nothing.
    public static func notYours(_ display: Display, action: String) -> DeskError {
        DeskError(.permissionDenied, "display \(display) belongs to another user; only its owner or an admin may \(action) it.")
    }
}
