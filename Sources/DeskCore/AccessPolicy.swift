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

    /// The refusal for touching another user's session. Display owners are no secret on a
    /// shared host (lock files and `ps` show them), so saying so plainly costs nothing.
    public static func notYours(_ display: Display, action: String) -> DeskError {
        DeskError(.permissionDenied, "display \(display) belongs to another user; only its owner or an admin may \(action) it.")
    }
}
