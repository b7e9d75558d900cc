import Foundation

/// The table `deskctl list` prints: aligned columns that fit 80 columns for ordinary names.
public enum SessionTable {
    public static let headers = ["DISPLAY", "USER", "STATE", "PID", "PORT", "DESKTOP", "GEOMETRY", "CLIENTS", "IDLE", "STARTED"]

    public static func render(_ sessions: [Session], now: Date = Date()) -> String {
        let rows = sessions.map { session in
            [
                session.display.description, session.user, session.state.rawValue, String(session.pid),
                String(session.rfbPort), session.desktop, session.geometry.description, String(session.clients),
                session.clients > 0 ? "-" : compactDuration(seconds: session.idleSeconds),
                compactDuration(seconds: Int(now.timeIntervalSince(session.startedAt))) + " ago",
            ]
        }
        return align([headers] + rows)
    }

    public static func align(_ rows: [[String]]) -> String {
        guard let width = rows.first?.count else { return "" }
        let widths = (0..<width).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == width - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
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
