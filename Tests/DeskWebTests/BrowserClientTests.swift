import DeskFrontProtocol
@testable import DeskWeb
import Testing

/// Issue 41: who a connection counts as, and the live-update streams' shares.
@Suite struct BrowserClientTests {
    @Test func aLocalPeerIsItsAccountARemoteOneItsAddressAndIPv6ItsSlash64() {
        #expect(BrowserClient.key(address: "127.0.0.1", owner: { 1001 }) == "uid:1001")
        #expect(BrowserClient.key(address: "127.45.6.7", owner: { 1001 }) == "uid:1001", "every loopback address of one user is one client")
        #expect(BrowserClient.key(address: "::ffff:127.0.0.9", owner: { 1002 }) == "uid:1002")
        #expect(BrowserClient.key(address: "::1", owner: { 0 }) == "uid:0")
        #expect(BrowserClient.key(address: "127.0.0.1", owner: { nil }) == nil, "an unknown owner is no client at all: such a peer is refused")
        #expect(BrowserClient.key(address: "192.0.2.1", local: "192.0.2.1", owner: { nil }) == nil, "nor on the host's own address")
        var asked = false
        #expect(BrowserClient.key(address: "192.0.2.7", owner: { asked = true; return 5 }) == "192.0.2.7")
        #expect(!asked, "the kernel is asked about peers on this host only")
        // A local user may connect from any of the host's addresses, and is then that account,
        // not a remote machine (issue 48).
        #expect(BrowserClient.key(address: "192.0.2.7", isThisHost: { $0 == "192.0.2.7" }, owner: { 5 }) == "uid:5")
        #expect(BrowserClient.key(address: "192.0.2.7", isThisHost: { $0 == "192.0.2.7" }, owner: { nil }) == nil,
                "a peer on one of this host's addresses whose owner is unknown is refused")
        #expect(BrowserClient.key(address: "2001:db8:1:2::7", isThisHost: { $0 == "2001:db8:1:2::7" }, owner: { 1001 }) == "uid:1001",
                "not its /64, which a whole LAN shares")
        #expect(BrowserClient.key(address: "::ffff:192.0.2.7", owner: { nil }) == "192.0.2.7")
        #expect(BrowserClient.key(address: "2001:db8:1:2:aaaa:bbbb:cccc:dddd", owner: { nil }) == "2001:db8:1:2::/64")
        #expect(BrowserClient.key(address: "2001:DB8:1:2::9", owner: { nil }) == "2001:db8:1:2::/64")
        #expect(BrowserClient.key(address: "2001:db8:1:3::9", owner: { nil }) == "2001:db8:1:3::/64")
    }

    /// A local user's connections from many loopback addresses share one client's cap.
    @Test func manyLoopbackAddressesOfOneAccountShareItsCap() {
        let quota = SharedAddressQuota(limit: 2)
        let admitted = (1...5).compactMap { ConnectionAddress.accept(peer: "127.0.0.\($0)", quota: quota, trustedProxies: [], owner: { 1002 }).admitted }
        #expect(admitted.count == 2)
        #expect(ConnectionAddress.accept(peer: "127.0.0.9", quota: quota, trustedProxies: [], owner: { 1001 }).admitted != nil, "another account has its own")
        if case .unknownOwner = ConnectionAddress.accept(peer: "127.0.0.9", quota: quota, trustedProxies: [], owner: { nil }) {} else {
            Issue.record("a local peer whose owner is unknown was not refused")
        }
        #expect(quota.open["uid:1002"] == 2 && quota.open.count == 2, "a refused peer takes no one's share: \(quota.open)")
        #expect(admitted.first?.address == "127.0.0.1" && admitted.first?.client == "uid:1002")
        for connection in admitted { connection.release() }
        #expect(quota.open == ["uid:1001": 1])
    }

    @Test func streamsAreBoundedPerLoginPerAccountAndInAll() {
        let streams = EventStreams(limits: .init(perLogin: 2, perAccount: 3, total: 5))
        #expect(streams.open(cookie: "a1", account: 1) == nil && streams.open(cookie: "a1", account: 1) == nil)
        #expect(streams.open(cookie: "a1", account: 1) == .login(2))
        #expect(streams.open(cookie: "a2", account: 1) == nil)
        #expect(streams.open(cookie: "a3", account: 1) == .account(3))
        #expect(streams.open(cookie: "b1", account: 2) == nil && streams.open(cookie: "c1", account: 3) == nil)
        #expect(streams.open(cookie: "d1", account: 4) == .total(5))
        streams.close(cookie: "a1", account: 1)
        #expect(streams.open(cookie: "d1", account: 4) == nil)
        #expect(streams.open == 5)
        #expect(EventStreams.Refusal.account(8).sentence.contains("8 portal pages"))
    }
}
