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
        for _ in 0..<1000 where limiter.admit(Self.entry(), changedSessions: false, now: 100) != nil { written += 1 }
        #expect(written == 10)
        // Another caller is not held up by the first one's flood, and real kills always go through.
        #expect(limiter.admit(Self.entry(uid: 1002), changedSessions: false, now: 100) != nil)
        let kill = limiter.admit(Self.entry(ok: true), changedSessions: true, now: 100)
        #expect(kill?.suppressed == 990)
        // The count is carried once; a minute later the bucket is full again.
        #expect(limiter.admit(Self.entry(ok: true), changedSessions: true, now: 100)?.suppressed == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 160) != nil)
    }

    @Test func successesThatChangedNothingAreLimitedLikeRefusals() {
        // `kill --all` with nothing to kill, `reap --dry-run` and `passwd` succeed without starting
        // or ending a session; a loop of them must not flush the trail either.
        var limiter = AuditLimiter(perMinute: 5)
        var written = 0
        for _ in 0..<500 where limiter.admit(Self.entry(ok: true), changedSessions: false, now: 0) != nil { written += 1 }
        #expect(written == 5)
        #expect(limiter.admit(Self.entry(ok: true), changedSessions: true, now: 0)?.suppressed == 495)
        // A refused request that claims a change is still a refusal.
        for _ in 0..<10 { _ = limiter.admit(Self.entry(ok: false), changedSessions: true, now: 0) }
        #expect(limiter.admit(Self.entry(ok: true), changedSessions: true, now: 0)?.suppressed == 10)
    }

    @Test func theSuppressedCountRidesOnTheNextRecordedRefusal() {
        var limiter = AuditLimiter(perMinute: 1)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 0)?.suppressed == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 1) == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 2) == nil)
        #expect(limiter.admit(Self.entry(), changedSessions: false, now: 61)?.suppressed == 2)
    }
}
