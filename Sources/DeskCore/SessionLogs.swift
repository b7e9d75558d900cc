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

/// One process of a session (Xvnc or the desktop): the end of its output and how it ended.
public struct ProcessLog: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable, CaseIterable {
        case xvnc, desktop
    }

    public var role: Role
    /// "exited with status 3" or "killed by signal 15 (Terminated)"; nil while it runs, or if it never started.
    public var exit: String?
    /// The last lines of its output, oldest first.
    public var lines: [String]
    /// Earlier lines exist and were left out.
    public var truncated: Bool

    public init(role: Role, exit: String?, lines: [String], truncated: Bool) {
        self.role = role
        self.exit = exit
        self.lines = lines
        self.truncated = truncated
    }
}

/// The reply to `deskctl logs`.
public struct SessionLogs: Codable, Sendable, Equatable {
    public var session: SessionSummary
    public var processes: [ProcessLog]

    public init(session: SessionSummary, processes: [ProcessLog]) {
        self.session = session
        self.processes = processes
    }

    /// The most lines of each process a reply carries, and the default.
    public static let maxLines = 5000
    public static let defaultLines = 50
    /// A longer line is cut: a desktop that prints a megabyte without a newline costs the reply 4 KiB.
    public static let maxLineBytes = 4096
    /// All lines of a reply together, counting each control byte as the six its JSON escape takes.
    public static let maxReplyBytes = 1 << 20

    /// How the session ended, as one phrase for `history`: the reason, then how each process ended.
    public static func outcome(reason: String, exits: [ProcessLog.Role: String]) -> String {
        let how = ProcessLog.Role.allCases.compactMap { role in exits[role].map { "\(role.rawValue) \($0)" } }
        return how.isEmpty ? reason : "\(reason) (\(how.joined(separator: "; ")))"
    }

    /// As `deskctl logs` prints it: a heading line for the session, then each process's lines
    /// under a heading that says how it ended. Every line is escaped: the output is the user's.
    /// Times as `clock` shows them, with the zone's name.
    public func render(clock: WallClock) -> String {
        var heading = "Session \(session.id) of \(session.user) on \(session.display) (\(session.desktop)), started \(clock.formatNamed(session.startedAt))"
        if let ended = session.endedAt {
            heading += ", ended \(clock.formatNamed(ended)): \(session.endReason ?? "unknown")."
        } else {
            heading += ", running."
        }
        var out = [TerminalText.escape(heading)]
        for process in processes {
            out.append("")
            out.append("== \(process.role.rawValue): \(TerminalText.escape(process.exit ?? (session.endedAt == nil ? "running" : "never started"))) ==")
            if process.truncated { out.append("(earlier lines left out; --lines shows more, up to \(Self.maxLines) and 1 MiB)") }
            if process.lines.isEmpty { out.append("(no output)") }
            // Indented, so no line of the user's output can pass for one of these headings.
            out += process.lines.map { "  " + TerminalText.escape($0) }
        }
        return out.joined(separator: "\n")
    }
}
