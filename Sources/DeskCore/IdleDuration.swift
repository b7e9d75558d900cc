import FoundationEssentials

/// Durations as admins write them in cron lines: 90s, 30m, 2h, 1d (or a bare number of seconds).
public enum IdleDuration {
    static let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86400]

    public static func seconds(parsing text: String) throws(DeskError) -> Int {
        let trimmed = text.lowercased()
        let unit = trimmed.last.flatMap { units[$0] }
        let digits = unit == nil ? trimmed : String(trimmed.dropLast())
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let value = Int(digits), value > 0, value <= 365 * 86400 / (unit ?? 1)
        else {
            throw DeskError(.invalidDuration, "'\(text)' is not a duration; write a number and a unit, for example 90s, 30m, 2h or 1d.")
        }
        return value * (unit ?? 1)
    }
}

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
