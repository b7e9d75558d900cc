import DeskFrontProtocol
@testable import DeskWeb
import NIOEmbedded
import Testing

/// deskd closes relays by number; the front may read that close before the grant it answers
/// has registered its connection (deskd answers the redeem, a revoke comes, and the front
/// reads both before the upgrade is done). Such a relay is refused when it registers.
@Suite struct RelayRegistryTests {
    static func grant(_ relay: UInt64) -> GatewayGrant {
        GatewayGrant(sessionID: "s", viewOnly: false, relay: relay)
    }

    @Test func aCloseThatOvertakesItsGrantRefusesTheRelay() {
        let registry = RelayRegistry()
        #expect(registry.take(relays: [7]).isEmpty)
        #expect(!registry.add(EmbeddedChannel(), grant: Self.grant(7)), "a relay deskd had closed was registered")
        // Another relay is not touched by it.
        let channel = EmbeddedChannel()
        #expect(registry.add(channel, grant: Self.grant(8)))
        #expect(registry.take(relays: [8]).count == 1)
    }

    /// Closes of relays that ended on their own are remembered only up to a bound, the oldest
    /// forgotten first.
    @Test func rememberedClosesAreBoundedOldestFirst() {
        let registry = RelayRegistry()
        let count = UInt64(RelayRegistry.closedEarlyLimit + 100)
        for relay in 1...count { _ = registry.take(relays: [relay]) }
        #expect(registry.add(EmbeddedChannel(), grant: Self.grant(1)), "the oldest close was kept past the bound")
        #expect(!registry.add(EmbeddedChannel(), grant: Self.grant(count)), "the newest close was forgotten")
    }
}
