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
