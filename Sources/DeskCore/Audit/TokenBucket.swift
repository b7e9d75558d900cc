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
    /// The division is only the estimate; the refill's own sum decides, as `take` will do it at
    /// that moment: a quotient a hair over a whole number (1 a minute: (1 - tokens) * 60 =
    /// 40.000000000001) does not say 41, and a time a whole number of seconds later that comes
    /// out a hair short of it (1060.214 - 1000.214 = 59.99999999999989) does not say 60 too few.
    var secondsToNextToken: Int {
        func enough(_ seconds: Int) -> Bool { tokens + ((at + Double(seconds)) - at) * rate >= 1 }
        var seconds = max(1, Int(((1 - tokens) / rate).rounded(.up)))
        while seconds > 1, enough(seconds - 1) { seconds -= 1 }
        while !enough(seconds) { seconds += 1 }
        return seconds
    }
}
