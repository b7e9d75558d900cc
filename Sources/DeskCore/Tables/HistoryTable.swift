/// The audit trail as `deskctl history` prints it: one line per entry, within 80 columns.
public enum HistoryTable {
    /// Each time as `clock` shows it, with its offset (`2026-11-23 10:04:05 +0100`): the zone is
    /// on the page, so a reader elsewhere, or one looking across a change of daylight saving, can tell.
    public static func render(_ entries: [AuditEntry], clock: WallClock) -> String {
        let rows = entries.map { entry in
            [
                clock.format(entry.time),
                entry.peerUser ?? entry.peerUID.map { "uid \($0)" } ?? "web",
                entry.command.rawValue,
                entry.user ?? "-",
                entry.display?.description ?? "-",
                entry.outcome + (entry.suppressed.map { " (after \($0) requests that changed nothing, not recorded)" } ?? ""),
            ].map { TerminalText.escape($0) }
        }
        let header = ["TIME", "BY", "COMMAND", "USER", "DISPLAY", "OUTCOME"]
        var widths = header.map(\.count)
        for row in [header] + rows {
            // The time is never clipped; names are, at 12, to keep a line within 80 columns.
            for (index, cell) in row.enumerated().dropLast() { widths[index] = max(widths[index], index == 0 ? cell.count : min(cell.count, 12)) }
        }
        return ([header] + rows).map { row in
            row.enumerated().map { index, cell in
                guard index < row.count - 1 else { return cell }
                let clipped = index == 0 ? cell : String(cell.prefix(12))
                return clipped.padded(to: widths[index])
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

extension String {
    /// Spaces after the text up to `width` characters; by hand, as `padding(toLength:)` is
    /// Foundation's NSString bridge, which deskctl does not link.
    func padded(to width: Int) -> String {
        let count = self.count
        return count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
