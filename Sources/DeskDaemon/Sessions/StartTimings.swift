/// Where a start spends its time, for `log_level = "debug"` and for profiling.
struct StartTimings: CustomStringConvertible, Sendable {
    private let origin = ContinuousClock.now
    private var marks: [(String, Duration)] = []

    mutating func mark(_ phase: String) { marks.append((phase, ContinuousClock.now - origin)) }

    /// Tenths of a millisecond, without `String(format:)` (which needs ICU).
    var description: String {
        marks.map { phase, elapsed in
            let tenths = elapsed.components.seconds * 10_000 + elapsed.components.attoseconds / 100_000_000_000_000
            return "\(phase)=\(tenths / 10).\(tenths % 10)"
        }.joined(separator: ",")
    }
}
