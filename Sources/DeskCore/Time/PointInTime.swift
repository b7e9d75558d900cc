import FoundationEssentials

/// A point in time as `deskctl history --since` takes it: a duration back from now (2h, 1d), or a
/// date (2026-11-22) or date and time (2026-11-22 14:30, 2026-11-22T14:30:00+01:00) on `clock`
/// unless it names a zone, so a time copied from `history`'s own output means what it showed.
public enum PointInTime {
    public static func parse(_ text: String, now: Date, clock: WallClock) throws(DeskError) -> Date {
        if let seconds = try? IdleDuration.seconds(parsing: text) {
            return now.addingTimeInterval(-Double(seconds))
        }
        if let date = clock.parse(text) { return date }
        throw DeskError(.invalidDuration, "'\(text)' is neither a duration nor a date; write 2h, 1d, 2026-11-22, 2026-11-22 14:30 (local time) or 2026-11-22T14:30:00Z.")
    }
}
