@testable import DeskDaemon
import Testing

/// What a portal page's live updates wait on: its own account's changes (an admin's, all).
@Suite struct SessionChangesTests {
    @Test func aPageHearsOfItsOwnAccountsChangesAndAnAdminsOfAll() async {
        let changes = SessionChanges()
        let alice = Task { await changes.next(for: .account(1001), after: 0, within: .seconds(5)) }
        let bob = Task { await changes.next(for: .account(1002), after: 0, within: .milliseconds(300)) }
        let admin = Task { await changes.next(for: .everyone, after: 0, within: .seconds(5)) }
        try? await Task.sleep(for: .milliseconds(50))
        changes.bump(uid: 1001)
        let (heardAlice, heardAdmin, heardBob) = (await alice.value, await admin.value, await bob.value)
        #expect(heardAlice == 1 && heardAdmin == 1)
        #expect(heardBob == nil, "bob's page heard of alice's change")
        // A count already past what a page saw answers at once.
        let past = await changes.next(for: .account(1001), after: 0, within: .seconds(5))
        #expect(past == 1)
        #expect(changes.generation(for: .account(1002)) == 0 && changes.generation(for: .everyone) == 1)
    }

    @Test func manyWaitsWokenEarlyLeaveNoTimerWaiting() async {
        let changes = SessionChanges()
        for round in 0..<200 {
            let waiting = Task { await changes.next(for: .account(7), after: UInt64(round), within: .seconds(60)) }
            try? await Task.sleep(for: .milliseconds(1))
            changes.bump(uid: 7)
            let heard = await waiting.value
            #expect(heard == UInt64(round + 1))
        }
    }
}
