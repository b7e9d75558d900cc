import DeskCore
import Foundation
import Testing

@Suite struct AuditCapsTests {
    static func entry(uid: UInt32 = 1001, ok: Bool = false, user: String? = "bob") -> AuditEntry {
        AuditEntry(time: Date(timeIntervalSince1970: 0), peerUID: uid, peerPID: 1, peerUser: "bob", command: .kill,
                   user: user, ok: ok, outcome: ok ? "killed :1 (bob)" : "permission-denied")
    }

    @Test func everyFieldIsCapped() {
        var entry = Self.entry(user: String(repeating: "x", count: 16_000))
        entry.detail = String(repeating: "d", count: 10_000)
        entry.outcome = String(repeating: "o", count: 10_000)
        let capped = entry.capped()
        #expect(capped.user!.utf8.count <= AuditEntry.nameLimit)
        #expect(capped.detail!.utf8.count <= AuditEntry.textLimit)
        #expect(capped.outcome.utf8.count <= AuditEntry.textLimit)
        #expect(capped.user!.hasSuffix("..."))
        #expect(Self.entry().capped() == Self.entry())
    }

    @Test func refusalsBeyondTheRateAreCountedNotWritten() {
        var limiter = AuditLimiter(perMinute: 10)
        var written = 0
        for _ in 0..<1000 where limiter.admit(Self.entry(), alwaysKept: false, now: 100) != nil { written += 1 }
        #expect(written == 10)
        // Another caller is not held up by the first one's flood, and real kills always go through.
        #expect(limiter.admit(Self.entry(uid: 1002), alwaysKept: false, now: 100) != nil)
        let kill = limiter.admit(Self.entry(ok: true), alwaysKept: true, now: 100)
        #expect(kill?.suppressed == 990)
        // The count is carried once; a minute later the bucket is full again.
        #expect(limiter.admit(Self.entry(ok: true), alwaysKept: true, now: 100)?.suppressed == nil)
        #expect(limiter.admit(Self.entry(), alwaysKept: false, now: 160) != nil)
    }

    @Test func successesThatChangedNothingAreLimitedLikeRefusals() {
        // `kill --all` with nothing to kill, `reap --dry-run` and `passwd` succeed without starting
        // or ending a session; a loop of them must not flush the trail either.
        var limiter = AuditLimiter(perMinute: 5)
        var written = 0
        for _ in 0..<500 where limiter.admit(Self.entry(ok: true), alwaysKept: false, now: 0) != nil { written += 1 }
        #expect(written == 5)
        #expect(limiter.admit(Self.entry(ok: true), alwaysKept: true, now: 0)?.suppressed == 495)
        // A refused request that claims a change is still a refusal.
        for _ in 0..<10 { _ = limiter.admit(Self.entry(ok: false), alwaysKept: true, now: 0) }
        #expect(limiter.admit(Self.entry(ok: true), alwaysKept: true, now: 0)?.suppressed == 10)
    }

    @Test func theSuppressedCountRidesOnTheNextRecordedRefusal() {
        var limiter = AuditLimiter(perMinute: 1)
        #expect(limiter.admit(Self.entry(), alwaysKept: false, now: 0)?.suppressed == nil)
        #expect(limiter.admit(Self.entry(), alwaysKept: false, now: 1) == nil)
        #expect(limiter.admit(Self.entry(), alwaysKept: false, now: 2) == nil)
        #expect(limiter.admit(Self.entry(), alwaysKept: false, now: 61)?.suppressed == 2)
    }

    /// Issue 41: anonymous web entries spent root's allowance (they were written as uid 0), and a
    /// refused login spent the victim's. Now a browser before its login has a bucket of its client.
    @Test func anonymousWebEntriesSpendTheirClientsAllowanceNotAnAccounts() {
        var limiter = AuditLimiter(perMinute: 5)
        func webLogin(_ user: String) -> AuditEntry {
            AuditEntry(time: Date(timeIntervalSince1970: 0), peerUID: nil, peerPID: 0, peerUser: nil, command: .login,
                       user: user, uid: 1001, detail: "web from 127.0.0.9", ok: false, outcome: "refused")
        }
        var written = 0
        for _ in 0..<40 where limiter.admit(webLogin("victim"), alwaysKept: false, client: "uid:1002", now: 0) != nil { written += 1 }
        #expect(written == 5)
        // root's refusals, the victim's own, and another client's are each their own allowance.
        #expect(limiter.admit(Self.entry(uid: 0), alwaysKept: false, now: 0) != nil)
        #expect(limiter.admit(Self.entry(uid: 1001), alwaysKept: false, now: 0) != nil)
        #expect(limiter.admit(webLogin("victim"), alwaysKept: false, client: "203.0.113.4", now: 0) != nil)
        // A credential issued is never left out, whatever the caller's bucket holds.
        for _ in 0..<10 { _ = limiter.admit(Self.entry(uid: 0), alwaysKept: false, now: 1) }
        var link = Self.entry(uid: 0, ok: true)
        link.command = .url
        #expect(limiter.admit(link, alwaysKept: true, now: 1) != nil)
    }

    /// What was left out is said in a summary entry once a minute has passed, whoever writes next.
    @Test func aSummarySaysHowManyWereLeftOut() {
        var limiter = AuditLimiter(perMinute: 2)
        for _ in 0..<12 { _ = limiter.admit(Self.entry(uid: 1002), alwaysKept: false, client: nil, now: 0) }
        #expect(limiter.summaries(now: 30, time: Date()).isEmpty, "not before a minute")
        let summaries = limiter.summaries(now: 61, time: Date())
        #expect(summaries.count == 1 && summaries[0].command == .suppressed && summaries[0].suppressed == 10 && summaries[0].peerUID == 1002,
                "\(summaries)")
        #expect(limiter.summaries(now: 200, time: Date()).isEmpty, "said once")
        for _ in 0..<5 { _ = limiter.admit(AuditEntry(time: Date(), peerUID: nil, peerPID: 0, peerUser: nil, command: .login, ok: false, outcome: "refused"),
                                           alwaysKept: false, client: "uid:1003", now: 300) }
        let web = limiter.summaries(now: 400, time: Date())
        #expect(web.count == 1 && web[0].peerUID == nil && web[0].detail == "web client uid:1003" && web[0].suppressed == 3, "\(web)")
    }

    /// Many browser clients together have ten times one caller's allowance, and one summary.
    @Test func browsersTogetherShareACeilingAndASummary() {
        var limiter = AuditLimiter(perMinute: 2)
        var written = 0
        for client in 0..<100 {
            for _ in 0..<2 where limiter.admit(AuditEntry(time: Date(), peerUID: nil, peerPID: 0, peerUser: nil, command: .login, ok: false, outcome: "refused"),
                                               alwaysKept: false, client: "203.0.113.\(client)", now: 0) != nil { written += 1 }
        }
        #expect(written == 20, "\(written) written")
        #expect(limiter.admit(Self.entry(uid: 1001), alwaysKept: false, now: 0) != nil, "a local caller's allowance is its own")
        let summaries = limiter.summaries(now: 60, time: Date())
        #expect(summaries.count == 1 && summaries[0].suppressed == 180 && summaries[0].detail?.hasSuffix("and 87 more") == true, "\(summaries)")
    }
}
