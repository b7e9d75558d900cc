import FoundationEssentials

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

/// The offset from UTC in force at one instant, and what the zone calls it then (CET, CEST).
public struct UTCOffset: Equatable, Sendable {
    /// Seconds east of UTC.
    public var seconds: Int
    public var abbreviation: String?

    public init(seconds: Int, abbreviation: String? = nil) {
        self.seconds = seconds
        self.abbreviation = abbreviation
    }

    /// `+0100`, `-0330`, `+0000`: the form RFC 5322 and `date +%z` use.
    public var numeric: String {
        let minutes = abs(seconds) / 60
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return (seconds < 0 ? "-" : "+") + two(minutes / 60) + two(minutes % 60)
    }
}

/// How the clocks of one zone read: the offset from UTC at each instant.
///
/// A function of the instant rather than one number, because daylight saving time moves the
/// offset twice a year: a history spanning the change shows each entry in the offset of its day.
/// DeskCore keeps no zone database (that is ICU's); deskctl answers from the C library's
/// `localtime_r`, tests with rules of their own.
public struct WallClock: Sendable {
    /// The offset in force at an instant.
    public let offset: @Sendable (Date) -> UTCOffset

    public init(offset: @escaping @Sendable (Date) -> UTCOffset) {
        self.offset = offset
    }

    public static let utc = WallClock { _ in UTCOffset(seconds: 0, abbreviation: "UTC") }

    /// What this clock shows at `date` (whole seconds, rounded down).
    public func civil(_ date: Date) -> CivilTime {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        return CivilTime(secondsSinceEpoch: seconds + Int64(offset(date).seconds))
    }

    /// `2026-11-23 10:04:05 +0100`: how `deskctl history` prints a time, and a form `--since` reads back.
    public func format(_ date: Date) -> String {
        civil(date).text() + " " + offset(date).numeric
    }

    /// `2026-11-23 10:04:05 CET`, the zone by name where the host gives one (else `+0100`).
    public func formatNamed(_ date: Date) -> String {
        let offset = offset(date)
        return civil(date).text() + " " + (offset.abbreviation.flatMap { $0.isEmpty ? nil : $0 } ?? offset.numeric)
    }

    /// The instant at which this clock shows `civil`.
    ///
    /// Where clocks go back, a time shown twice means the earlier instant (so `--since` leaves
    /// nothing of that hour out); where they go forward, a time never shown means the instant
    /// it would have shown had they not (02:30 on the night 02:00 became 03:00 is 03:30).
    public func instant(showing civil: CivilTime) -> Date {
        let wall = civil.secondsSinceEpoch
        func date(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: Double(seconds)) }
        // The wall time read as UTC is within a day of the instant, so the offsets in force a day
        // either side of it are the ones that can apply (no zone changes its offset twice in two days).
        let before = offset(date(wall - 86400)).seconds
        let after = offset(date(wall + 86400)).seconds
        let fits = Set([before, after]).map { wall - Int64($0) }.filter { Int64(offset(date($0)).seconds) == wall - $0 }
        return date(fits.min() ?? wall - Int64(before))
    }

    /// A time as a person writes one for `--since`: `2026-11-22`, `2026-11-22 14:30`,
    /// `2026-11-22T14:30:05`, each optionally with a zone (`Z`, `+01:00`, `+0100`, `-05`),
    /// and what `format` prints. Without a zone, the time is this clock's.
    public func parse(_ text: String) -> Date? {
        guard let (civil, zone) = TimeText.parse(text, requireTime: false) else { return nil }
        guard let zone else { return instant(showing: civil) }
        return Date(timeIntervalSince1970: Double(civil.secondsSinceEpoch - Int64(zone)))
    }
}

/// The written forms of a time that deskd reads: a date, then optionally a time, then optionally
/// a zone; what both `--since` and ISO 8601 in JSON need, and nothing of a locale.
enum TimeText {
    /// The civil time written, and the zone's offset in seconds if one was written.
    static func parse(_ text: String, requireTime: Bool) -> (CivilTime, Int?)? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.skip("-"), let month = scanner.digits(2), scanner.skip("-"),
              let day = scanner.digits(2)
        else { return nil }
        var civil = CivilTime(year: year, month: month, day: day)
        if scanner.skip("T") || scanner.skip("t") || (scanner.peek(" ") && scanner.peekDigit(at: 1) && scanner.skip(" ")) {
            guard let hour = scanner.digits(2), scanner.skip(":"), let minute = scanner.digits(2) else { return nil }
            (civil.hour, civil.minute) = (hour, minute)
            if scanner.skip(":") {
                guard let second = scanner.digits(2) else { return nil }
                civil.second = second
                // A fraction of a second is read and dropped: every time deskd keeps is whole seconds.
                if scanner.skip(".") || scanner.skip(",") {
                    guard scanner.digits(1) != nil else { return nil }
                    while scanner.digits(1) != nil {}
                }
            }
        } else if requireTime {
            return nil
        }
        guard civil.isValid else { return nil }
        if scanner.atEnd { return (civil, nil) }
        _ = scanner.skip(" ")
        if (scanner.skip("Z") || scanner.skip("z")) && scanner.atEnd { return (civil, 0) }
        let sign = scanner.skip("+") ? 1 : scanner.skip("-") ? -1 : 0
        guard sign != 0, let hours = scanner.digits(2), hours <= 23 else { return nil }
        var minutes = 0
        if !scanner.atEnd {
            _ = scanner.skip(":")
            guard let value = scanner.digits(2), value <= 59 else { return nil }
            minutes = value
        }
        guard scanner.atEnd else { return nil }
        return (civil, sign * (hours * 3600 + minutes * 60))
    }

    /// A cursor over ASCII bytes.
    struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        func peek(_ character: Unicode.Scalar) -> Bool { position < bytes.count && bytes[position] == UInt8(ascii: character) }

        func peekDigit(at offset: Int) -> Bool {
            position + offset < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position + offset])
        }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard peek(character) else { return false }
            position += 1
            return true
        }

        /// Exactly `count` decimal digits, as a number.
        mutating func digits(_ count: Int) -> Int? {
            guard (0..<count).allSatisfy({ peekDigit(at: $0) }) else { return nil }
            let value = bytes[position..<position + count].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            position += count
            return value
        }
    }
}

extension Int64 {
    /// Division rounding toward negative infinity, so times before 1970 land on the right day.
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
