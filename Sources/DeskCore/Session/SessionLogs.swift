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
