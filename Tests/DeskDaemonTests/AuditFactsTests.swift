@testable import DeskDaemon
import DeskCore
import Testing

/// The audit trail says what the verb's typed request says was asked, not whatever else the
/// wire request carried; a request refused for its arguments is told by what it named.
@Suite struct AuditFactsTests {
    @Test func onlyWhatTheVerbTakesIsAudited() throws {
        var wire = Request(command: .kill, display: Display(4))
        wire.viewOnly = true          // not a kill's argument
        wire.ttlSeconds = 60          // nor this
        wire.dryRun = true
        let facts = AuditFacts(try ControlRequest(wire))
        #expect(facts == AuditFacts(try ControlRequest(Request(command: .kill, display: Display(4)))))
        #expect(!facts.viewOnly && !facts.dryRun && facts.details.isEmpty && facts.display == Display(4))
    }

    @Test func aLinkIsAuditedWithItsTTLItsViewersAndItsKind() throws {
        let mint = AuditFacts(try ControlRequest(Request(command: .url, display: Display(2), viewOnly: true, ttlSeconds: 120)))
        #expect(mint.details == ["ttl=120s"] && mint.viewOnly)
        var revoke = Request(command: .url, display: Display(2))
        revoke.revoke = true
        #expect(AuditFacts(try ControlRequest(revoke)).url == .revoke(share: nil))
    }

    @Test func aRefusedRequestIsToldByWhatItNamedOnly() {
        var wire = Request(command: .start)
        wire.geometry = "not-a-geometry"
        wire.user = String(repeating: "u", count: 500)
        #expect(throws: DeskError.self) { try ControlRequest(wire) }
        let facts = AuditFacts(refused: wire)
        #expect(facts.details.isEmpty && facts.user?.count == 64)
    }
}
