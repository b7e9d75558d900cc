import FoundationEssentials

/// ISO 8601 times in UTC, whole seconds: `2026-11-22T07:31:02Z`. By hand, because Foundation's
/// `.iso8601` strategy goes through ICU, whose first use costs milliseconds in every deskctl run.
public enum InternetTime {
    public static func format(_ date: Date) -> String {
        WallClock.utc.civil(date).text(separator: "T") + "Z"
    }

    /// What `format` writes, and any ISO 8601 date and time with a zone (`+01:00`, a fraction).
    public static func parse(_ text: String) -> Date? {
        guard let (civil, offset) = TimeText.parse(text, requireTime: true), let offset else { return nil }
        return Date(timeIntervalSince1970: Double(civil.secondsSinceEpoch - Int64(offset)))
    }
}
