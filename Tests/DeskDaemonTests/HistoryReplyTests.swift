@testable import DeskDaemon
import DeskCore
import Foundation
import Testing

/// A history reply is bounded twice, by entries and by bytes, keeps the newest, and reads the
/// trail backwards only as far as it needs.
@Suite struct HistoryReplyTests {
    static func entries(_ count: Int, detail: Int = 10, uid: (Int) -> UInt32 = { _ in 1001 }) -> [AuditEntry] {
        (0..<count).map { index in
            AuditEntry(time: Date(timeIntervalSince1970: Double(index)), peerUID: uid(index), peerPID: 1, peerUser: "bob", command: .start,
                       user: "bob", uid: uid(index), detail: String(repeating: "d", count: detail), ok: true, outcome: "started")
        }
    }

    /// Writes `entries` as the trail does, the older half in the rotated file.
    static func trail(_ entries: [AuditEntry]) throws -> (files: [String], remove: () -> Void) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-history-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let lines = try entries.map { String(decoding: try JSONEncoder.desk.encode($0), as: UTF8.self) + "\n" }
        let half = lines.count / 2
        try lines[..<half].joined().write(toFile: directory + "/audit.log.1", atomically: false, encoding: .utf8)
        try lines[half...].joined().write(toFile: directory + "/audit.log", atomically: false, encoding: .utf8)
        return ([directory + "/audit.log", directory + "/audit.log.1"], { try? FileManager.default.removeItem(atPath: directory) })
    }

    static let admin = Caller(uid: 0, gid: 0, pid: 1, userName: "root", isAdmin: true)

    @Test func theNewestEntriesThatFitBothCapsOldestFirst() throws {
        let all = Self.entries(5000)
        let (files, remove) = try Self.trail(all)
        defer { remove() }
        let byCount = AuditTrail.newest(in: files, visibleTo: Self.admin, since: nil, user: nil, count: 2000, bytes: 1 << 30)
        #expect(byCount.count == 2000 && byCount.first?.time == all[3000].time && byCount.last?.time == all[4999].time)

        // Across the rotation: everything, in order.
        let everything = AuditTrail.newest(in: files, visibleTo: Self.admin, since: nil, user: nil, count: 10_000, bytes: 1 << 30)
        #expect(everything == all)

        let large = Self.entries(5000, detail: 500)
        let (largeFiles, removeLarge) = try Self.trail(large)
        defer { removeLarge() }
        let byBytes = AuditTrail.newest(in: largeFiles, visibleTo: Self.admin, since: nil, user: nil, count: 2000, bytes: 1 << 20)
        let encoded = try JSONEncoder.desk.encode(byBytes)
        #expect(byBytes.count < 2000 && encoded.count <= 1 << 20)
        #expect(byBytes.last?.time == large.last?.time)
    }

    @Test func aUserReadsOnlyHerLinesAndSinceEndsTheRead() throws {
        // Every third entry is uid 1001's; the others belong to uid 10010 and 100, whose numbers
        // share digits with hers.
        let all = Self.entries(3000) { [1001, 10010, 100][$0 % 3] }
        let (files, remove) = try Self.trail(all)
        defer { remove() }
        let bob = Caller(uid: 1001, gid: 1001, pid: 1, userName: "bob", isAdmin: false)
        let hers = AuditTrail.newest(in: files, visibleTo: bob, since: nil, user: nil, count: 10_000, bytes: 1 << 30)
        #expect(hers == all.filter { $0.peerUID == 1001 })
        let recent = AuditTrail.newest(in: files, visibleTo: bob, since: Date(timeIntervalSince1970: 2500), user: nil, count: 10_000, bytes: 1 << 30)
        #expect(recent == all.filter { $0.peerUID == 1001 && $0.time.timeIntervalSince1970 >= 2500 })
    }

    @Test func linesComeBackLastFirstWhateverTheChunkSize() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-lines-\(UUID())").path
        defer { unlink(path) }
        let lines = (0..<200).map { String(repeating: "x", count: $0 % 37) + "\($0)" }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
        for chunk in [1, 7, 64, 4096] {
            var seen: [String] = []
            BackwardLines.each(in: path, chunk: chunk) { line, _ in seen.append(String(decoding: line, as: UTF8.self)); return true }
            #expect(seen == lines.reversed(), "chunk \(chunk)")
        }
        var firstThree: [String] = []
        BackwardLines.each(in: path, chunk: 16) { line, _ in firstThree.append(String(decoding: line, as: UTF8.self)); return firstThree.count < 3 }
        #expect(firstThree == Array(lines.reversed().prefix(3)))
    }

    /// A line longer than `longest` comes as its first bytes, flagged, whatever the chunking; and
    /// a file of one 8 MiB line comes as one cut line.
    @Test func longLinesComeCutFromTheirStart() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-long-\(UUID())").path
        defer { unlink(path) }
        let long = "BEGIN" + String(repeating: "y", count: 100) + "END"
        try "first\n\(long)\nlast".write(toFile: path, atomically: false, encoding: .utf8)
        for chunk in [1, 3, 16, 50, 4096] {
            var seen: [(String, Bool)] = []
            BackwardLines.each(in: path, chunk: chunk, longest: 10) { line, cut in seen.append((String(decoding: line, as: UTF8.self), cut)); return true }
            #expect(seen.map(\.0) == ["last", "BEGINyyyyy", "first"], "chunk \(chunk)")
            #expect(seen.map(\.1) == [false, true, false], "chunk \(chunk)")
        }
        try String(repeating: "z", count: 8 << 20).write(toFile: path, atomically: false, encoding: .utf8)
        var count = 0
        BackwardLines.each(in: path, longest: 4096) { line, cut in count += 1; return cut && line.count == 4096 }
        #expect(count == 1)
    }

    @Test func oneReadPerCallerAndAFewInAll() {
        var readers = ReadGate(reading: "history")
        #expect(readers.enter(uid: 1001) == nil)
        #expect(readers.enter(uid: 1001)?.code == .limitReached)
        for uid in 1002...1004 { #expect(readers.enter(uid: UInt32(uid)) == nil) }
        #expect(readers.enter(uid: 1005)?.code == .limitReached)
        readers.leave(uid: 1001)
        #expect(readers.enter(uid: 1005) == nil)
    }
}
