import FoundationEssentials

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
