@testable import DeskDaemon
import Testing

/// Issue 41: the portal's bounds count clients and accounts, not addresses or names, and what a
/// crowd does cannot erase what the bounds hold.
@Suite("The portal's fair shares")
struct PortalFairnessTests {
    /// A running penalty stays however many other keys arrive (10,200 made-up names from fresh
    /// addresses once pushed the victim's account out of a table of 10,000).
    @Test func aRunningPenaltyIsNeverForgottenForRoom() {
        let throttle = LoginThrottle(capacity: 100)
        let now = ContinuousClock.now
        for index in 0..<10 { throttle.attempted(client: "203.0.113.\(index)", account: 1001, now: now) }
        #expect(throttle.wait(client: "198.51.100.1", account: 1001, now: now) != nil, "ten failures throttle the account")
        // A flood of names that are no account, from as many fresh clients as the table holds and more.
        for index in 0..<1000 { throttle.attempted(client: "10.0.\(index / 250).\(index % 250)", account: nil, now: now + .milliseconds(index)) }
        #expect(throttle.keys.clients <= 100 && throttle.keys.accounts == 1, "the table stays bounded")
        #expect(throttle.wait(client: "198.51.100.1", account: 1001, now: now + .seconds(2)) != nil, "the account's penalty is still there")
    }

    /// When every client in the table has a penalty running, a new client waits: it is neither
    /// let through uncounted nor given room by dropping a penalty.
    @Test func aFullTableOfPenaltiesMakesNewClientsWait() {
        let throttle = LoginThrottle(capacity: 3)
        let now = ContinuousClock.now
        for client in ["a", "b", "c"] { for _ in 0..<5 { throttle.attempted(client: client, account: nil, now: now) } }
        #expect(throttle.wait(client: "d", account: 1001, now: now) == LoginThrottle.fullTableWait)
        #expect(throttle.wait(client: "a", account: nil, now: now) != nil && throttle.keys.clients == 3)
    }

    /// Names that are no account cost their sender only: no key of their own, and the sender is
    /// throttled after five.
    @Test func aNameThatIsNoAccountCostsTheSender() {
        let throttle = LoginThrottle()
        let now = ContinuousClock.now
        for _ in 0..<5 { throttle.attempted(client: "uid:1002", account: nil, now: now) }
        #expect(throttle.keys.clients == 1 && throttle.keys.accounts == 0)
        #expect(throttle.wait(client: "uid:1002", account: nil, now: now) != nil)
        #expect(throttle.wait(client: "uid:1003", account: 1001, now: now) == nil, "nobody else waits for it")
    }

    /// The account is its uid: "Alice" and "alice", which a case-insensitive directory gives one
    /// uid, share one allowance (deskd looks the name up, and keys by what it finds).
    @Test func anAccountIsCountedByUidWhateverItsSpelling() {
        let throttle = LoginThrottle()
        let now = ContinuousClock.now
        for index in 0..<10 { throttle.attempted(client: "192.0.2.\(index)", account: 1001, now: now) }
        #expect(throttle.wait(client: "192.0.2.200", account: 1001, now: now) != nil)
        #expect(throttle.wait(client: "192.0.2.200", account: 1002, now: now) == nil)
    }

    /// Issue 48: strangers' guesses lock an account out for everyone else, but never for the
    /// account's own connections on this host (the kernel names it; that proves more than a
    /// password), whose own mistakes count against that client alone.
    @Test func strangersGuessesNeverLockOutTheAccountsOwnConnection() {
        let throttle = LoginThrottle()
        let now = ContinuousClock.now
        for index in 0..<10 { throttle.attempted(client: index < 5 ? "uid:2001" : "uid:2002", account: 1001, now: now) }
        #expect(throttle.wait(client: "192.0.2.9", account: 1001, now: now) != nil, "a remote browser still waits for the account's penalty")
        #expect(throttle.wait(client: "uid:2003", account: 1001, now: now) != nil, "so does another local account")
        #expect(throttle.wait(client: "uid:1001", account: 1001, now: now) == nil, "the owner's own connection does not")
        for _ in 0..<5 { throttle.attempted(client: "uid:1001", account: 1001, now: now) }
        #expect(throttle.wait(client: "uid:1001", account: 1001, now: now) != nil, "the owner's own five mistakes make its client wait")
        #expect(throttle.wait(client: "uid:1001", account: 1001, now: now + .seconds(31)) == nil)
        throttle.succeeded(client: "uid:1001", account: 1001)
        #expect(throttle.wait(client: "192.0.2.9", account: 1001, now: now + .seconds(31)) == nil,
                "the owner's mistakes were never the account's: the strangers' penalty ran out on time")
    }

    /// One slot per client, two per account, a queue with one waiting login per client, and a
    /// right password waits at most for a slot to free, not for the crowd.
    @Test func slotsAreSharedByClientAndAccountAndAFreedSlotGoesToTheQueue() async {
        let slots = LoginSlots(limits: .init(total: 3, perClient: 1, perAccount: 2, waiting: 4, wait: .seconds(5)))
        let attacker = LoginSlots.Holder(client: "uid:1002", account: 2000)
        #expect(await slots.acquire(attacker))
        // A second login of the same client waits; a third is told busy at once.
        async let second = slots.acquire(attacker)
        try? await Task.sleep(for: .milliseconds(100))
        #expect(await !slots.acquire(attacker), "one waiting login per client")
        // Another client at the same account has the account's second slot.
        let other = LoginSlots.Holder(client: "192.0.2.1", account: 2000)
        #expect(await slots.acquire(other))
        let victim = LoginSlots.Holder(client: "uid:1001", account: 1001)
        #expect(await slots.acquire(victim), "another account's login finds the last slot")
        #expect(slots.counts == (3, 1))
        slots.release(attacker)
        #expect(await second, "the freed slot went to the login waiting for it")
        for holder in [attacker, other, victim] { slots.release(holder) }
        #expect(slots.counts == (0, 0))
    }

    @Test func aLoginThatFindsNoSlotWaitsAndThenIsRefused() async {
        let slots = LoginSlots(limits: .init(total: 1, perClient: 1, perAccount: 1, waiting: 4, wait: .milliseconds(300)))
        let first = LoginSlots.Holder(client: "a", account: 1)
        #expect(await slots.acquire(first))
        let started = ContinuousClock.now
        #expect(await !slots.acquire(.init(client: "b", account: 2)))
        #expect(ContinuousClock.now - started >= .milliseconds(250), "it waited its turn first")
        slots.release(first)
        #expect(slots.counts == (0, 0))
    }

    /// The daemon's log: no value or message can end a line, rewrite it, or reach a terminal as an escape.
    @Test func theLogEscapesEveryControlCharacter() {
        let quoted = DaemonLogHandler.quoted("alice\r\u{1b}[2J\nforged=1\t\u{7f}\u{2028}")
        #expect(quoted == #""alice\r\u{1b}[2J\nforged=1\t\u{7f}\u{2028}""#, "\(quoted)")
        #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
        #expect(DaemonLogHandler.quoted("plain") == "plain")
        #expect(DaemonLogHandler.escaped("web front cut off: \r\u{1b}[31mred") == #"web front cut off: \r\u{1b}[31mred"#)
    }
}
