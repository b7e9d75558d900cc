import DeskCore
import Foundation
import Testing

@Suite("Limits, rate limiting and the audit trail's rules")
struct SessionLimitsTests {
    @Test("by default everyone may have up to four desktops of any shape the parser accepts")
    func defaults() throws {
        let limits = SessionLimits()
        try limits.checkAccount(.init(name: "alice", groups: []))
        try limits.checkDesktop("anything")
        try limits.checkGeometry(Geometry(width: 8192, height: 8192))
        try limits.checkCapacity(user: "alice", userSessions: 3, hostSessions: 90)
        let error = #expect(throws: DeskError.self) { try limits.checkCapacity(user: "alice", userSessions: 4, hostSessions: 4) }
        #expect(error?.code == .limitReached)
        #expect(error?.message.contains("limits.max_sessions_per_user (4)") == true)
    }

    @Test("the host limit names itself")
    func hostLimit() {
        var limits = SessionLimits()
        limits.maxSessions = 10
        let error = #expect(throws: DeskError.self) { try limits.checkCapacity(user: "bob", userSessions: 0, hostSessions: 10) }
        #expect(error?.message.contains("limits.max_sessions (10)") == true)
    }

    @Test("allowed users and groups admit either, refuse the rest naming both lists")
    func allowedAccounts() throws {
        var limits = SessionLimits()
        limits.allowedUsers = ["alice"]
        limits.allowedGroups = ["vnc-users"]
        try limits.checkAccount(.init(name: "alice", groups: []))
        try limits.checkAccount(.init(name: "bob", groups: ["vnc-users"]))
        let error = #expect(throws: DeskError.self) { try limits.checkAccount(.init(name: "eve", groups: [])) }
        #expect(error?.code == .userNotAllowed)
        #expect(error?.message == "user eve may not have a desktop on this host: limits.allowed_users and limits.allowed_groups admit only users alice and members of vnc-users; ask an admin.")
    }

    @Test("desktops and geometry outside the configured bounds are refused, naming the key")
    func desktopsAndGeometry() throws {
        var limits = SessionLimits()
        limits.allowedDesktops = ["xterm", "xfce"]
        limits.maximumGeometry = Geometry(width: 2560, height: 1440)
        try limits.checkDesktop("xfce")
        #expect(throws: DeskError.self) { try limits.checkDesktop("gnome") }
        try limits.checkGeometry(Geometry(width: 2560, height: 1440))
        let error = #expect(throws: DeskError.self) { try limits.checkGeometry(Geometry(width: 3840, height: 1080)) }
        #expect(error?.message.contains("limits.max_geometry 2560x1440") == true)
        #expect(limits.fitting(Geometry(width: 3840, height: 1080)) == Geometry(width: 2560, height: 1080))
    }

    @Test("the start rate allows a minute's burst, then one start per refill interval, per uid")
    func startRate() throws {
        var limiter = CallerRateLimiter(perMinute: 3)
        for _ in 0..<3 { try limiter.admit(uid: 1000, now: 0) }
        let error = #expect(throws: DeskError.self) { try limiter.admit(uid: 1000, now: 1) }
        #expect(error?.message == "too many starts: limits.starts_per_minute allows 3 a minute per user; try again in 19 s.")
        try limiter.admit(uid: 1001, now: 1)          // another user is not affected
        try limiter.admit(uid: 1000, now: 20.5)       // one token back after 20 s
        #expect(throws: DeskError.self) { try limiter.admit(uid: 1000, now: 21) }
    }

    @Test("users see the audit entries they made or that touch their sessions; admins see all")
    func auditVisibility() {
        let entry = AuditEntry(time: Date(), peerUID: 0, peerPID: 1, peerUser: "root", command: .start,
                               user: "alice", uid: 1000, display: Display(3), ok: true, outcome: "started")
        let alice = Caller(uid: 1000, gid: 1000, pid: 5, userName: "alice", isAdmin: false)
        let bob = Caller(uid: 1001, gid: 1001, pid: 6, userName: "bob", isAdmin: false)
        let admin = Caller(uid: 1002, gid: 1002, pid: 7, userName: "carol", isAdmin: true)
        #expect(entry.isVisible(to: alice))
        #expect(!entry.isVisible(to: bob))
        #expect(entry.isVisible(to: admin))
    }

    @Test("--since takes a duration back from now or a date")
    func since() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(try PointInTime.parse("2h", now: now, clock: .utc) == now.addingTimeInterval(-7200))
        #expect(try PointInTime.parse("2026-11-22", now: now, clock: .utc) == Date(timeIntervalSince1970: 1_795_305_600))
        #expect(try PointInTime.parse("2026-11-22T01:00:00Z", now: now, clock: .utc) == Date(timeIntervalSince1970: 1_795_309_200))
        #expect(throws: DeskError.self) { try PointInTime.parse("yesterday", now: now, clock: .utc) }
    }

    @Test("history lines fit 80 columns for ordinary entries")
    func historyTable() {
        let entry = AuditEntry(time: Date(timeIntervalSince1970: 1_795_309_200), peerUID: 0, peerPID: 1, peerUser: "root", command: .start,
                               user: "alice", uid: 1000, display: Display(3), ok: true, outcome: "started")
        let text = HistoryTable.render([entry], clock: .utc)
        // Each time carries its offset from UTC (issue 12: history's times carry their zone).
        #expect(text == """
            TIME                       BY    COMMAND  USER   DISPLAY  OUTCOME
            2026-11-22 01:00:00 +0000  root  start    alice  :3       started
            """)
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= 80 })
    }
}
