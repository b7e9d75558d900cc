@testable import DeskDaemon
import DeskCore
import Foundation
import Testing

/// The kept logs of ended sessions: the newest session per display, the last lines of each
/// process across a rotation, long lines cut, and retention that never touches a live session.
@Suite struct SessionLogArchiveTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-logs-\(UUID())").path
    var archive: SessionLogArchive { SessionLogArchive(directory: root) }

    static func id(_ n: Int) -> String { String(repeating: "0", count: 31) + String(n, radix: 16) }

    func make(_ n: Int, display: Int, startedAt: Double, endedAt: Double?) throws -> SessionSummary {
        try FileManager.default.createDirectory(atPath: archive.path(of: Self.id(n)), withIntermediateDirectories: true)
        var summary = SessionSummary(id: Self.id(n), user: "bob", uid: 1001, display: Display(display), desktop: "xterm",
                                     startedAt: Date(timeIntervalSince1970: startedAt))
        summary.endedAt = endedAt.map(Date.init(timeIntervalSince1970:))
        summary.endReason = endedAt == nil ? nil : "killed by root"
        archive.save(summary)
        return summary
    }

    @Test func theNewestEndedSessionOnADisplayIsFound() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        _ = try make(1, display: 3, startedAt: 100, endedAt: 200)
        _ = try make(2, display: 3, startedAt: 300, endedAt: 400)
        _ = try make(3, display: 4, startedAt: 500, endedAt: 600)
        #expect(archive.newest(on: Display(3))?.id == Self.id(2))
        #expect(archive.newest(on: Display(5)) == nil)
        #expect(archive.summary(of: "../etc") == nil)
    }

    @Test func linesComeFromTheEndAcrossTheRotationAndLongOnesAreCut() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let summary = try make(1, display: 3, startedAt: 100, endedAt: 200)
        let base = archive.path(of: summary.id)
        try "old 1\nold 2\n".write(toFile: base + "/desktop.log.1", atomically: true, encoding: .utf8)
        try "new 1\r\n\(String(repeating: "x", count: 10_000))\nnew 3\n".write(toFile: base + "/desktop.log", atomically: true, encoding: .utf8)
        try "exited with status 3\n".write(toFile: base + "/desktop.exit", atomically: true, encoding: .utf8)

        let four = archive.logs(of: summary, lines: 4)
        let desktop = try #require(four.processes.first { $0.role == .desktop })
        #expect(desktop.exit == "exited with status 3")
        #expect(desktop.lines.count == 4 && desktop.lines.first == "old 2" && desktop.lines[1] == "new 1" && desktop.lines.last == "new 3")
        #expect(desktop.lines[2].utf8.count < SessionLogs.maxLineBytes + 20 && desktop.lines[2].hasSuffix("[line cut]"))
        #expect(desktop.truncated)
        #expect(archive.logs(of: summary, lines: 10).processes.first { $0.role == .desktop }?.truncated == false)
        let xvnc = try #require(four.processes.first { $0.role == .xvnc })
        #expect(xvnc.lines.isEmpty && xvnc.exit == nil)
    }

    @Test func retentionKeepsTheNewestEndedAndEveryLiveSession() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        for n in 1...5 { _ = try make(n, display: n, startedAt: Double(n * 10), endedAt: Double(n * 10 + 5)) }
        _ = try make(6, display: 6, startedAt: 1, endedAt: nil)   // running, started before all of them
        archive.prune(keep: 2, live: [Self.id(6)])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: root))
        #expect(left == [Self.id(4), Self.id(5), Self.id(6)])
    }

    @Test func anEndIsRecordedWithHowEachProcessEnded() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let summary = try make(1, display: 3, startedAt: 100, endedAt: nil)
        try "killed by signal 15 (Terminated)\n".write(toFile: archive.path(of: summary.id) + "/xvnc.exit", atomically: true, encoding: .utf8)
        let exits = archive.end(summary, reason: "desktop exited", at: Date(timeIntervalSince1970: 150))
        #expect(exits == [.xvnc: "killed by signal 15 (Terminated)"])
        #expect(archive.summary(of: summary.id)?.endReason == "desktop exited")
        #expect(SessionLogs.outcome(reason: "desktop exited", exits: [.xvnc: "killed by signal 15 (Terminated)", .desktop: "exited with status 3"])
                == "desktop exited (xvnc killed by signal 15 (Terminated); desktop exited with status 3)")
    }
}
