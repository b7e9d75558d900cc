@testable import DeskDaemon
import DeskCore
import Foundation
import Testing

/// The kept logs of ended sessions: the newest session per display, the last lines of each
/// process across a rotation, long lines cut and replies bounded, and retention per owner that
/// never touches a live session or a start in flight.
@Suite struct SessionLogArchiveTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-logs-\(UUID())").path
    var archive: SessionLogArchive { SessionLogArchive(directory: root) }

    static func id(_ n: Int) -> String { String(repeating: "0", count: 31) + String(n, radix: 16) }

    @discardableResult
    func make(_ n: Int, uid: UInt32 = 1001, display: Int, ended: Bool) throws -> (summary: SessionSummary, path: String) {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let path = try #require(archive.newPath(uid: uid, id: Self.id(n)))
        var summary = SessionSummary(id: Self.id(n), user: "u\(uid)", uid: uid, display: Display(display), desktop: "xterm",
                                     startedAt: Date(timeIntervalSince1970: Double(n)))
        archive.save(summary, in: path)
        if ended { archive.end(in: path, summary, reason: "killed by root", at: Date(timeIntervalSince1970: Double(n) + 1)) }
        summary = archive.summary(in: path) ?? summary
        return (summary, path)
    }

    @Test func theNewestEndedSessionOnADisplayIsFoundWhoeverOwnedIt() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        try make(1, uid: 1001, display: 3, ended: true)
        try make(2, uid: 1002, display: 3, ended: true)
        try make(3, uid: 1001, display: 4, ended: true)
        #expect(archive.newest(on: Display(3))?.summary.id == Self.id(2))
        #expect(archive.newest(on: Display(3))?.path == archive.path(of: Self.id(2)))
        #expect(archive.newest(on: Display(5)) == nil)
        #expect(archive.path(of: Self.id(1))?.hasSuffix("/1001/" + Self.id(1)) == true)
        #expect(archive.path(of: "../etc") == nil)
    }

    @Test func linesComeFromTheEndAcrossTheRotationCutAndWithinTheBudget() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (summary, base) = try make(1, display: 3, ended: true)
        try "old 1\nold 2\n".write(toFile: base + "/desktop.log.1", atomically: true, encoding: .utf8)
        try "new 1\r\n\(String(repeating: "x", count: 10_000))\nnew 3\n".write(toFile: base + "/desktop.log", atomically: true, encoding: .utf8)
        try "exited with status 3\n".write(toFile: base + "/desktop.exit", atomically: true, encoding: .utf8)

        let four = archive.logs(of: summary, in: base, lines: 4, bytes: 1 << 20)
        let desktop = try #require(four.processes.first { $0.role == .desktop })
        #expect(desktop.exit == "exited with status 3")
        #expect(desktop.lines.count == 4 && desktop.lines.first == "old 2" && desktop.lines[1] == "new 1" && desktop.lines.last == "new 3")
        #expect(desktop.lines[2] == String(repeating: "x", count: SessionLogs.maxLineBytes) + " [line cut]")
        #expect(desktop.truncated)
        #expect(archive.logs(of: summary, in: base, lines: 10, bytes: 1 << 20).processes.first { $0.role == .desktop }?.truncated == false)
        let xvnc = try #require(four.processes.first { $0.role == .server })
        #expect(xvnc.lines.isEmpty && xvnc.exit == nil)

        // Control bytes count six times: a log of them fills the budget six times sooner.
        try String(repeating: String(repeating: "\u{1}", count: 99) + "\n", count: 100).write(toFile: base + "/desktop.log", atomically: true, encoding: .utf8)
        let bounded = archive.logs(of: summary, in: base, lines: 5000, bytes: 2 * 6 * 1000).processes.first { $0.role == .desktop }
        #expect(bounded?.lines.count == 10 && bounded?.truncated == true)
    }

    @Test func retentionIsPerOwnerAndSparesLiveSessionsAndStartsInFlight() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        for n in 1...5 { try make(n, uid: 1001, display: n, ended: true) }
        try make(6, uid: 1001, display: 6, ended: false)   // running
        try make(7, uid: 1001, display: 7, ended: false)   // starting: in no live set yet
        try make(8, uid: 1002, display: 8, ended: true)    // another owner's
        archive.prune(owner: 1001, keep: 2, live: [Self.id(6)])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: root + "/1001"))
        #expect(left == [Self.id(4), Self.id(5), Self.id(6), Self.id(7)])
        #expect(archive.path(of: Self.id(8)) != nil)
        // A start that never finished (deskd died) counts as ended once it is old.
        archive.prune(owner: 1001, keep: 2, live: [Self.id(6)], now: Date().addingTimeInterval(2 * SessionLogArchive.unfinishedGrace))
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: root + "/1001")) == [Self.id(5), Self.id(6), Self.id(7)])
    }

    @Test func anEndIsRecordedWithHowEachProcessEnded() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (summary, path) = try make(1, display: 3, ended: false)
        try "killed by signal 15 (Terminated)\n".write(toFile: path + "/server.exit", atomically: true, encoding: .utf8)
        let exits = archive.end(in: path, summary, reason: "desktop exited", at: Date(timeIntervalSince1970: 150))
        #expect(exits == [.server: "killed by signal 15 (Terminated)"])
        #expect(archive.summary(of: summary.id)?.endReason == "desktop exited")
        #expect(SessionLogs.outcome(reason: "desktop exited", exits: [.server: "killed by signal 15 (Terminated)", .desktop: "exited with status 3"])
                == "desktop exited (server killed by signal 15 (Terminated); desktop exited with status 3)")
    }

    /// A session whose deskd-session was started by a deskd from before the server's role was
    /// `server` wrote `xvnc.log` and `xvnc.exit`, and goes on writing them after an upgrade:
    /// they are its server's, and deskd's own notes go beside them.
    @Test func aSessionFromBeforeTheRoleWasServerIsReadFromItsFormerFiles() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (summary, path) = try make(2, display: 4, ended: false)
        try "Xvnc TigerVNC 1.12.0\n".write(toFile: path + "/xvnc.log", atomically: true, encoding: .utf8)
        try "exited with status 0\n".write(toFile: path + "/xvnc.exit", atomically: true, encoding: .utf8)
        archive.note("the desktop was slow", to: .server, in: path)
        #expect(archive.exits(in: path) == [.server: "exited with status 0"])
        let logs = archive.logs(of: summary, in: path, lines: 10, bytes: 1 << 16)
        #expect(logs.processes.first { $0.role == .server }?.lines == ["Xvnc TigerVNC 1.12.0", "deskd: the desktop was slow"])
        #expect(access(path + "/server.log", F_OK) != 0)
        // JSON from a deskd of before says the same role.
        #expect(try JSONDecoder().decode(ProcessLog.Role.self, from: Data("\"xvnc\"".utf8)) == .server)
    }
}
