/// A token bucket refilled continuously: `perMinute` tokens a minute, holding a minute's worth
/// at most. What the start rate, the credential-change rate and the audit trail's allowances
/// each keep per caller. Times are seconds on any monotonic clock.
struct TokenBucket: Sendable {
    let perMinute: Int
    private(set) var tokens: Double
    private var at: Double

    /// A full bucket at `now`.
    init(perMinute: Int, now: Double) {
        self.perMinute = perMinute
        self.tokens = Double(perMinute)
        self.at = now
    }

    var rate: Double { Double(perMinute) / 60 }

    /// Refills to `now`, then takes a token if there is a whole one.
    mutating func take(now: Double) -> Bool {
        tokens = min(Double(perMinute), tokens + (now - at) * rate)
        at = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Whether it would be full at `now`: such a bucket can be forgotten and made anew.
    func isFull(at now: Double) -> Bool {
        tokens + (now - at) * rate >= Double(perMinute)
    }

    /// Whole seconds from the last `take` until a whole token is there: the first that works.
    /// The division is only the estimate; the refill's own sum decides, so a quotient a hair
    /// over a whole number (1 a minute: (1 - tokens) * 60 = 40.000000000001) does not say 41.
    var secondsToNextToken: Int {
        var seconds = max(1, Int(((1 - tokens) / rate).rounded(.up)))
        while seconds > 1, tokens + Double(seconds - 1) * rate >= 1 { seconds -= 1 }
        while tokens + Double(seconds) * rate < 1 { seconds += 1 }
        return seconds
    }
}
