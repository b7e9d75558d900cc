/// Median, 10th and 90th percentile of a sample.
struct Stats {
    let values: [Double]
    var sorted: [Double] { values.sorted() }
    func percentile(_ p: Double) -> Double {
        let s = sorted
        guard !s.isEmpty else { return .nan }
        let rank = p * Double(s.count - 1)
        let low = Int(rank.rounded(.down)), high = Int(rank.rounded(.up))
        return s[low] + (s[high] - s[low]) * (rank - Double(low))
    }
    var median: Double { percentile(0.5) }
    /// The 10th to the 90th percentile, in `unit`.
    func spread(in unit: (Double) -> String) -> String { "\(unit(percentile(0.1)))–\(unit(percentile(0.9)))" }
}
