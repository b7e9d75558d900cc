/// Requests of one kind allowed per caller per minute: a token bucket per uid, refilled
/// continuously. A burst up to the whole minute's allowance is fine; a loop is not. Starts
/// (`limits.starts_per_minute`), and the credential changes every one of which the audit trail
/// keeps (links, shares taken back, passwords, extensions).
public struct CallerRateLimiter: Sendable {
    public let perMinute: Int
    /// What is counted, as the refusal names it ("starts"), and the rule that allows `perMinute`.
    public let what: String
    public let rule: String
    private var buckets: [UInt32: TokenBucket] = [:]

    public init(perMinute: Int, what: String = "starts", rule: String = "limits.starts_per_minute") {
        self.perMinute = perMinute
        self.what = what
        self.rule = rule
    }

    /// Takes a token for `uid` at `now` (seconds on any monotonic clock), or says when to retry.
    public mutating func admit(uid: UInt32, now: Double) throws(DeskError) {
        var bucket = buckets[uid] ?? TokenBucket(perMinute: perMinute, now: now)
        let taken = bucket.take(now: now)
        buckets[uid] = bucket
        guard taken else {
            throw DeskError(.limitReached, "too many \(what): \(rule) allows \(perMinute) a minute per user; try again in \(bucket.secondsToNextToken) s.")
        }
        // Forget full buckets now and then, so the table does not grow with every uid ever seen.
        if buckets.count > 1024 {
            buckets = buckets.filter { !$0.value.isFull(at: now) }
        }
    }
}
