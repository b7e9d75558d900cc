import Foundation

/// The audit trail as `deskctl history` prints it: one line per entry, within 80 columns.
public enum HistoryTable {
    public static func render(_ entries: [AuditEntry], timeZone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let rows = entries.map { entry in
            [
                formatter.string(from: entry.time),
                entry.peerUser ?? "uid \(entry.peerUID)",
                entry.command.rawValue,
                entry.user ?? "-",
                entry.display?.description ?? "-",
                entry.outcome + (entry.suppressed.map { " (after \($0) requests that changed nothing, not recorded)" } ?? ""),
            ].map { TerminalText.escape($0) }
        }
        let header = ["TIME", "BY", "COMMAND", "USER", "DISPLAY", "OUTCOME"]
        var widths = header.map(\.count)
        for row in [header] + rows {
            for (index, cell) in row.enumerated().dropLast() { widths[index] = max(widths[index], min(cell.count, 12)) }
        }
        return ([header] + rows).map { row in
            row.enumerated().map { index, cell in
                guard index < row.count - 1 else { return cell }
                let clipped = index == 0 ? cell : String(cell.prefix(12))
                return clipped.padding(toLength: max(widths[index], index == 0 ? 19 : 0), withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
