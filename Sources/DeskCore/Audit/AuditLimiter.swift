import FoundationEssentials

/// Keeps requests that changed nothing from flushing the audit trail. The trail rotates at a
/// fixed size, so a user looping over refused requests, or over requests that succeed without
/// effect (`kill --all` with nothing to kill, `reap --dry-run`), could otherwise push every real
/// entry out of it. Each caller has its own bucket of `perMinute` such entries (a token bucket,
/// refilled continuously): a local caller by uid, a browser not logged in by its client (the
/// portal's `WebPeer.client`), so that anonymous web traffic never spends a local account's
/// allowance, root's least of all. Browsers before their login also share one bucket of ten
/// times that, so that many clients together cannot flush the trail either. What is left out is
/// counted: the count rides on that caller's next recorded entry as `suppressed`, and a summary
/// entry says it once a minute has passed (`summaries`: one per local caller, one for every web
/// client together), whether or not that caller comes back.
///
/// Entries that start or end sessions, or issue or change a credential (a link, a share, a
/// password, a portal login that succeeded, an extension), are always recorded: they are
/// what the trail is for, and each is bounded by its own limit (the start rate, the session
/// limits, links outstanding per caller, the login throttle).
public struct AuditLimiter: Sendable {
    public let perMinute: Int
    private struct Bucket {
        var allowance: TokenBucket
        var suppressed = 0
        /// When the first entry of the count now held was left out.
        var since: Double?
        /// Whose bucket it is, for its summary: the caller's uid, or nil for a web client.
        var peerUID: UInt32?
    }
    private var buckets: [String: Bucket] = [:]
    /// Every browser before its login, together: ten callers' allowance.
    private var web: TokenBucket?

    public init(perMinute: Int = 30) {
        self.perMinute = perMinute
    }

    /// Which bucket `entry` spends: its caller's uid, or (no caller: a browser before its login)
    /// `client`.
    public static func bucket(of entry: AuditEntry, client: String?) -> String {
        entry.peerUID.map { "uid:\($0)" } ?? "web:" + (client ?? "?")
    }

    /// What to write for `entry` at `now` (seconds on a monotonic clock): the entry, with the
    /// count of entries left out before it, or nil to leave it out. `alwaysKept`: the entry
    /// started or ended a session, or issued or changed a credential. `client`: the browser's
    /// client, for an entry with no caller.
    public mutating func admit(_ entry: AuditEntry, alwaysKept: Bool, client: String? = nil, now: Double) -> AuditEntry? {
        let key = Self.bucket(of: entry, client: client)
        var bucket = buckets[key] ?? Bucket(allowance: TokenBucket(perMinute: perMinute, now: now), peerUID: entry.peerUID)
        if !(entry.ok && alwaysKept) {
            // An anonymous entry needs a token of its client's and one of all browsers'; a token
            // is taken from neither unless both have one.
            var shared = web ?? TokenBucket(perMinute: perMinute * 10, now: now)
            var own = bucket.allowance
            let admitted = own.take(now: now) && (entry.peerUID != nil || shared.take(now: now))
            if admitted {
                bucket.allowance = own
                if entry.peerUID == nil { web = shared }
            }
            guard admitted else {
                bucket.suppressed += 1
                if bucket.since == nil { bucket.since = now }
                buckets[key] = bucket
                return nil
            }
        }
        var written = entry
        if bucket.suppressed > 0 { written.suppressed = bucket.suppressed }
        bucket.suppressed = 0
        bucket.since = nil
        buckets[key] = bucket
        // Forget callers whose bucket is full again and who owe no count.
        if buckets.count > 1024 {
            buckets = buckets.filter { $0.value.suppressed > 0 || !$0.value.allowance.isFull(at: now) }
        }
        return written
    }

    /// A summary entry for every bucket whose first entry left out is at least `after` seconds
    /// old: how many were left out, and whose they were. Their counts start again from zero.
    public mutating func summaries(now: Double, time: Date, after: Double = 60) -> [AuditEntry] {
        var due: [AuditEntry] = []
        var webClients: [String] = [], webCount = 0
        for (key, bucket) in buckets where bucket.suppressed > 0 && now - (bucket.since ?? now) >= after {
            if bucket.peerUID == nil {
                webClients.append(String(key.dropFirst(4)))
                webCount += bucket.suppressed
            } else {
                var entry = AuditEntry(time: time, peerUID: bucket.peerUID, peerPID: 0, peerUser: nil, command: .suppressed, ok: true,
                                       outcome: "\(bucket.suppressed) \(bucket.suppressed == 1 ? "entry" : "entries") of this caller left out by the audit rate limit")
                entry.suppressed = bucket.suppressed
                due.append(entry)
            }
            buckets[key]?.suppressed = 0
            buckets[key]?.since = nil
        }
        due.sort { ($0.peerUID ?? 0) < ($1.peerUID ?? 0) }
        if webCount > 0 {
            // One line for every browser client together, naming a few: a crowd of clients gets one summary, not one each.
            webClients.sort()
            let named = webClients.prefix(3).joined(separator: ", ") + (webClients.count > 3 ? " and \(webClients.count - 3) more" : "")
            var entry = AuditEntry(time: time, peerUID: nil, peerPID: 0, peerUser: nil, command: .suppressed,
                                   detail: "web \(webClients.count == 1 ? "client" : "clients") \(named)", ok: true,
                                   outcome: "\(webCount) \(webCount == 1 ? "entry" : "entries") of browsers before their login left out by the audit rate limit")
            entry.suppressed = webCount
            due.append(entry)
        }
        return due
    }
}
