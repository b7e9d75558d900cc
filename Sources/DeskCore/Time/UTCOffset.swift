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
