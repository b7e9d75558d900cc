import FoundationEssentials

/// One line of the audit trail: who asked for a state change, what, on whom, and how it ended.
///
/// Written by the daemon as one JSON object per line; never holds a password.
public struct AuditEntry: Codable, Sendable, Equatable {
    public var time: Date
    /// The caller, from SO_PEERCRED (a logged-in portal page: its login's account). nil for what a
    /// browser did before any login (a portal login, refused or not): the account tried is `user`
    /// and `uid`, and the browser's address is in `detail`.
    public var peerUID: UInt32?
    public var peerPID: Int32
    public var peerUser: String?
    public var command: AuditAction
    /// The account acted on (start: the session's user; kill --user: that user).
    public var user: String?
    public var uid: UInt32?
    public var display: Display?
    /// Request details worth keeping: desktop, geometry, idle time, view-only, dry run.
    public var detail: String?
    public var ok: Bool
    /// On failure, the error code; on success, what happened ("started", "killed :3, :4").
    public var outcome: String
    /// Entries of this caller left out of the trail just before this entry (see `AuditLimiter`).
    public var suppressed: Int?

    public init(time: Date, peerUID: UInt32?, peerPID: Int32, peerUser: String?, command: AuditAction, user: String? = nil,
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

    /// The most any text field keeps: a request may name a user of 16 KiB, the trail keeps 64 bytes of it.
    public static let nameLimit = 64
    public static let textLimit = 512

    /// The entry with every caller-influenced field cut to its cap, so one request costs the
    /// trail a few hundred bytes however large it was.
    public func capped() -> AuditEntry {
        var entry = self
        entry.peerUser = peerUser.map { Self.cut($0, to: Self.nameLimit) }
        entry.user = user.map { Self.cut($0, to: Self.nameLimit) }
        entry.detail = detail.map { Self.cut($0, to: Self.textLimit) }
        entry.outcome = Self.cut(outcome, to: Self.textLimit)
        return entry
    }

    static func cut(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        for character in text {
            guard result.utf8.count + character.utf8.count <= limit - 3 else { break }
            result.append(character)
        }
        return result + "..."
    }

    /// Users see entries they made and entries about their own sessions (or portal logins to their
    /// own account); admins see all.
    public func isVisible(to caller: Caller) -> Bool {
        caller.isAdmin || peerUID == caller.uid || uid == caller.uid
    }
}
