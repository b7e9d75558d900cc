/// A date and a time of day on the Gregorian calendar, in no zone: what a clock on the wall shows.
///
/// By hand (Howard Hinnant's days-from-civil), because Foundation's calendars need ICU, whose
/// 30 MB of data and first-use cost no deskctl run should pay to print or read a time.
public struct CivilTime: Equatable, Sendable {
    public var year: Int
    public var month: Int
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int

    public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    /// The civil time `seconds` after 1970-01-01 00:00:00 on the same clock.
    public init(secondsSinceEpoch seconds: Int64) {
        let days = seconds.floorDivided(by: 86400)
        let inDay = Int(seconds - days * 86400)
        // Days since 0000-03-01, in 400-year eras of 146097 days; March first puts the leap day last.
        let shifted = days + 719_468
        let era = shifted.floorDivided(by: 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        self.init(
            year: Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0)), month: Int(month),
            day: Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1),
            hour: inDay / 3600, minute: inDay % 3600 / 60, second: inDay % 60
        )
    }

    /// Seconds since 1970-01-01 00:00:00 on the same clock.
    public var secondsSinceEpoch: Int64 {
        let year = Int64(month <= 2 ? self.year - 1 : self.year)
        let era = year.floorDivided(by: 400)
        let yearOfEra = year - era * 400
        let dayOfYear = Int64((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1)
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// A day that exists and a time of day a clock shows (second 60 only for a leap second).
    public var isValid: Bool {
        guard (1...12).contains(month), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }

    /// `2026-11-23 10:04:05`, or with `separator: "T"` the ISO 8601 form.
    public func text(separator: String = " ") -> String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = String(year)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-\(two(month))-\(two(day))"
            + "\(separator)\(two(hour)):\(two(minute)):\(two(second))"
    }
}

extension Int64 {
    /// Division rounding toward negative infinity, so times before 1970 land on the right day.
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
