@testable import DeskDaemon
import DeskCore
import Foundation
import Testing

/// A history reply is bounded twice, by entries and by bytes, and keeps the newest.
@Suite struct HistoryReplyTests {
    static func entries(_ count: Int, detail: Int = 10) -> [AuditEntry] {
        (0..<count).map { index in
            AuditEntry(time: Date(timeIntervalSince1970: Double(index)), peerUID: 1001, peerPID: 1, peerUser: "bob", command: .start,
                       user: "bob", detail: String(repeating: "d", count: detail), ok: true, outcome: "started")
        }
    }

    @Test func theNewestEntriesThatFitBothCapsOldestFirst() throws {
        let all = Self.entries(5000)
        let byCount = ControlHandler.newest(all, count: 2000, bytes: 1 << 30)
        #expect(byCount.count == 2000 && byCount.first?.time == all[3000].time && byCount.last?.time == all[4999].time)

        let large = Self.entries(5000, detail: 500)
        let byBytes = ControlHandler.newest(large, count: 2000, bytes: 1 << 20)
        let encoded = try JSONEncoder.desk.encode(byBytes)
        #expect(byBytes.count < 2000 && encoded.count <= 1 << 20)
        #expect(byBytes.last?.time == large.last?.time)
    }
}
