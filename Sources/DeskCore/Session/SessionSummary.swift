import FoundationEssentials

/// What deskd keeps of every session beside its output, in `<state>/logs/<id>/session.json`:
/// written when the session starts and again when it ends, so the owner and admins can read how
/// a desktop ended after it is gone.
public struct SessionSummary: Codable, Sendable, Equatable {
    public var id: String
    public var user: String
    public var uid: UInt32
    public var display: Display
    public var desktop: String
    public var startedAt: Date
    /// nil while the session runs.
    public var endedAt: Date?
    /// Why deskd ended it, or noticed it end: "killed", "idle", "desktop exited", "login refused".
    public var endReason: String?

    public init(id: String, user: String, uid: UInt32, display: Display, desktop: String, startedAt: Date,
                endedAt: Date? = nil, endReason: String? = nil) {
        self.id = id
        self.user = user
        self.uid = uid
        self.display = display
        self.desktop = desktop
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.endReason = endReason
    }

    /// A running session's summary.
    public init(_ session: Session) {
        self.init(id: session.id, user: session.user, uid: session.uid, display: session.display,
                  desktop: session.desktop, startedAt: session.startedAt)
    }

    /// Whether `text` can be a session id: deskd's ids are 32 lowercase hex digits, and nothing
    /// else may name a directory under the logs.
    public static func isSessionID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
