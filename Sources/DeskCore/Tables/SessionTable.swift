import FoundationEssentials

/// The table `deskctl list` prints: aligned columns within 80 columns for ordinary names
/// (pid and port are in `show` and `--json`; the port is 5900 + the display anyway).
public enum SessionTable {
    public static let headers = ["DISPLAY", "USER", "STATE", "DESKTOP", "GEOMETRY", "CLIENTS", "IDLE", "STARTED"]
    static let stateColumn = 2

    /// `colour`: ANSI colours for the state (for a terminal, and only without NO_COLOR).
    /// With a cluster desktop among them, two more columns: where it runs (its node and job, or
    /// why Slurm keeps it queued) and the time its job has left.
    public static func render(_ sessions: [Session], now: Date = Date(), colour: Bool = false) -> String {
        let cluster = sessions.contains { $0.slurm != nil }
        let rows = sessions.map { session in
            var row = [
                session.display.description, session.user, session.state.rawValue,
                session.desktop, session.geometry.description, String(session.clients),
                session.clients > 0 ? "-" : compactDuration(seconds: session.idleSeconds),
                compactDuration(seconds: Int(now.timeIntervalSince(session.startedAt))) + " ago",
            ]
            if cluster { row += [whereColumn(session), session.slurm?.secondsLeft(now: now).map { compactDuration(seconds: $0) } ?? "-"] }
            return row
        }
        return align([cluster ? headers + ["WHERE", "LEFT"] : headers] + rows) { row, column, padded in
            guard colour, row > 0, column == stateColumn, let state = SessionState(rawValue: rows[row - 1][column]) else { return padded }
            let code = switch state {
            case .ready: "32"
            case .starting, .stopping, .queued: "33"
            case .unresponsive, .exited: "31"
            }
            return "\u{1B}[\(code)m\(padded)\u{1B}[0m"
        }
    }

    /// "this host", "node2 (job 12)", or a queued job's reason: "job 12: Resources".
    static func whereColumn(_ session: Session) -> String {
        guard let job = session.slurm else { return "this host" }
        if let node = job.node { return "\(node) (job \(job.jobId))" }
        return "job \(job.jobId): \(job.reason ?? job.state)"
    }

    /// Pads every column but the last; `style` may wrap a padded cell (in colour, say)
    /// after the widths are measured, so escape codes never skew the alignment.
    public static func align(_ rows: [[String]], style: (_ row: Int, _ column: Int, _ padded: String) -> String = { $2 }) -> String {
        guard let width = rows.first?.count else { return "" }
        // Names come from NSS and requests: no cell may carry a control sequence to the terminal.
        let rows = rows.map { $0.map { TerminalText.escape($0) } }
        let widths = (0..<width).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.enumerated().map { index, row in
            row.enumerated().map { column, cell in
                style(index, column, column == width - 1 ? cell : cell.padded(to: widths[column]))
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// Colours only for a terminal, and never with NO_COLOR set (https://no-color.org) or TERM=dumb.
    public static func wantsColour(environment: [String: String], isTerminal: Bool) -> Bool {
        isTerminal && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }

    /// 45s, 12m, 3h, 2d: the largest unit that fits.
    public static func compactDuration(seconds: Int) -> String {
        let s = max(0, seconds)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m" }
        if s < 86400 { return "\(s / 3600)h" }
        return "\(s / 86400)d"
    }
}
