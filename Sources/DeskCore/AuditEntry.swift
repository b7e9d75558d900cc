import Foundation

/// One line of the audit trail: who asked for a state change, what, on whom, and how it ended.
///
/// Written by the daemon as one JSON object per line; never holds a password.
public struct AuditEntry: Codable, Sendable, Equatable {
    public var time: Date
    /// The caller, from SO_PEERCRED.
    public var peerUID: UInt32
    public var peerPID: Int32
    public var peerUser: String?
    public var command: Command
    /// The account acted on (start: the session's user; kill --user: that user).
    public var user: String?
    public var uid: UInt32?
    public var display: Display?
    /// Request details worth keeping: desktop, geometry, idle time, view-only, dry run.
    public var detail: String?
    public var ok: Bool
    /// On failure, the error code; on success, what happened ("started", "killed :3, :4").
    public var outcome: String

    public init(time: Date, peerUID: UInt32, peerPID: Int32, peerUser: String?, command: Command, user: String? = nil,
                uid: UInt32? = nil, display: Display? = nil, detail: String? = nil, ok: Bool, outcome: String) {
        self.time = time
        self.peerUID = peerUID
        self.peerPID = peerPID
        self.peerUser = peerUser
        self.command = command
        self.user = user
        self.uid = uid
        self.display = display
        self.detail = detail
        self.ok = ok
        self.outcome = outcome
    }

    /// Users see entries they made and entries about their own sessions; admins see all.
    public func isVisible(to caller: Caller) -> Bool {
        caller.isAdmin || peerUID == caller.uid || uid == caller.uid
    }

    /// The commands that change state, and so are audited.
    public static let auditedCommands: Set<Command> = [.start, .kill, .reap, .passwd]
}
