import FoundationEssentials

/// Keeps requests that changed nothing from flushing the audit trail. The trail rotates at a
/// fixed size, so a user looping over refused requests, or over requests that succeed without
/// effect (`kill --all` with nothing to kill, `reap --dry-run`, `passwd` on their own desktop),
/// could otherwise push every real entry out of it. Each caller may have `perMinute` such entries
/// recorded (a token bucket, refilled continuously); the rest are counted, and the count rides on
/// that caller's next recorded entry as `suppressed`. Entries that started or ended sessions are
/// always recorded: starts are bounded by the start rate and the session limits, and ends by starts.
public struct AuditLimiter: Sendable {
    public let perMinute: Int
    private var buckets: [UInt32: (tokens: Double, at: Double, suppressed: Int)] = [:]

    public init(perMinute: Int = 30) {
        self.perMinute = perMinute
    }

    /// What to write for `entry` at `now` (seconds on a monotonic clock): the entry, with the
    /// count of entries left out before it, or nil to leave it out. `changedSessions` says the
    /// request started or ended at least one session.
    public mutating func admit(_ entry: AuditEntry, changedSessions: Bool, now: Double) -> AuditEntry? {
        let uid = entry.peerUID
        let rate = Double(perMinute) / 60
        var bucket = buckets[uid] ?? (Double(perMinute), now, 0)
        bucket.tokens = min(Double(perMinute), bucket.tokens + (now - bucket.at) * rate)
        bucket.at = now
        if !(entry.ok && changedSessions) {
            guard bucket.tokens >= 1 else {
                bucket.suppressed += 1
                buckets[uid] = bucket
                return nil
            }
            bucket.tokens -= 1
        }
        var written = entry
        if bucket.suppressed > 0 { written.suppressed = bucket.suppressed }
        bucket.suppressed = 0
        buckets[uid] = bucket
        // Forget callers whose bucket is full again and who owe no count.
        if buckets.count > 1024 {
            buckets = buckets.filter { $0.value.suppressed > 0 || $0.value.tokens + (now - $0.value.at) * rate < Double(perMinute) }
        }
        return written
    }
}
