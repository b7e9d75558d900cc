/// A Slurm time limit, as `sbatch --time` takes it and squeue's `%l` and `%L` print it:
/// `MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`; or UNLIMITED.
public struct SlurmTime: Sendable, Equatable, CustomStringConvertible {
    /// nil: no limit (UNLIMITED, INFINITE).
    public var seconds: Int?

    public init(seconds: Int?) { self.seconds = seconds }

    /// The most deskd takes: a year, well past any partition's MaxTime.
    public static let maxSeconds = 366 * 86_400

    /// Parses Slurm's forms; nil for anything else (squeue's `INVALID`, `NOT_SET`, garbage).
    public init?(slurm text: String) {
        if ["UNLIMITED", "INFINITE", "Partition_Limit"].contains(text) {
            self.seconds = nil
            return
        }
        var days = 0
        var clock = Substring(text)
        if let dash = text.firstIndex(of: "-") {
            guard let d = Self.number(text[..<dash]) else { return nil }
            days = d
            clock = text[text.index(after: dash)...]
        }
        let parts = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), parts.allSatisfy({ Self.number($0) != nil }) else { return nil }
        let values = parts.map { Self.number($0)! }
        let hasDays = text.contains("-")
        var total: Int
        switch (hasDays, values.count) {
        case (false, 1): total = values[0] * 60                                     // MM
        case (false, 2): total = values[0] * 60 + values[1]                         // MM:SS
        case (_, 3): total = values[0] * 3600 + values[1] * 60 + values[2]         // [D-]HH:MM:SS
        case (true, 1): total = values[0] * 3600                                    // D-HH
        case (true, 2): total = values[0] * 3600 + values[1] * 60                   // D-HH:MM
        default: return nil
        }
        total += days * 86_400
        guard total <= Self.maxSeconds else { return nil }
        self.seconds = total
    }

    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 7, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) else { return nil }
        return Int(text)
    }

    /// As sbatch takes it and squeue prints it: `D-HH:MM:SS`, or `HH:MM:SS` under a day.
    public var description: String {
        guard let seconds else { return "UNLIMITED" }
        let days = seconds / 86_400, h = seconds % 86_400 / 3600, m = seconds % 3600 / 60, s = seconds % 60
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let clock = "\(days > 0 ? two(h) : String(h)):\(two(m)):\(two(s))"
        return days > 0 ? "\(days)-\(clock)" : clock
    }
}
