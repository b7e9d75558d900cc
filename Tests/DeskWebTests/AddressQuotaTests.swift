import DeskFrontProtocol
@testable import DeskWeb
import NIOHTTP1
import Testing

@Suite struct AddressQuotaTests {
    @Test func oneAddressGetsUpToItsLimitAndItsSlotsBack() {
        var quota = AddressQuota()
        let firstThree = (0..<3).map { _ in quota.admit("192.0.2.7", limit: 3) }
        let fourth = quota.admit("192.0.2.7", limit: 3)
        let other = quota.admit("192.0.2.8", limit: 3)
        #expect(firstThree == [true, true, true] && !fourth)
        #expect(other, "another address has its own slots")
        quota.release("192.0.2.7")
        let again = quota.admit("192.0.2.7", limit: 3)
        #expect(again)
        for _ in 0..<3 { quota.release("192.0.2.7") }
        quota.release("192.0.2.8")
        #expect(quota.open.isEmpty, "released addresses leave no entry behind")
    }

    /// Issue 26, item 4: loopback was exempt, so one local user could hold all 256 slots.
    @Test func loopbackIsCountedLikeAnyAddressAndOnlyPeerlessConnectionsAreNot() {
        var quota = AddressQuota()
        let loopback = (0..<3).map { _ in quota.admit("127.0.0.1", limit: 2) }
        let unknown = [quota.admit(nil, limit: 1), quota.admit(nil, limit: 1)]
        #expect(loopback == [true, true, false], "a local user is one address too")
        #expect(unknown == [true, true])
        #expect(quota.open == ["127.0.0.1": 2])
    }

    /// The browser's address is the last one in X-Forwarded-For, the one the proxy appended:
    /// what came before it was written by whoever connected to the proxy and proves nothing.
    @Test func theForwardedAddressIsTheOneTheProxyAppended() {
        func client(_ values: [String]) -> String {
            var headers = HTTPHeaders()
            for value in values { headers.add(name: "X-Forwarded-For", value: value) }
            return ForwardedFor.client(peer: "127.0.0.1", headers: headers)
        }
        #expect(client(["198.51.100.4"]) == "198.51.100.4")
        #expect(client(["6.6.6.6, 198.51.100.4"]) == "198.51.100.4", "a spoofed first hop is passed over")
        #expect(client(["203.0.113.5", "127.0.0.1"]) == "127.0.0.1", "a local user through nginx is loopback, not what it wrote")
        #expect(client([]) == "127.0.0.1", "no header: the proxy itself")
        // Issue 48 (a cold review): a last hop that is no address is not the proxy's word, and
        // must never read as a client key of another kind, such as an account's own "uid:N".
        #expect(client(["uid:1055"]) == "127.0.0.1")
        #expect(client(["198.51.100.4, loopback-behind-proxy"]) == "127.0.0.1")
        #expect(client(["2001:DB8::1"]) == "2001:db8::1")
    }

    /// A trusted proxy's connection is counted by the browser behind it, at its first request;
    /// any other peer's by its own address at once, whatever it claims in X-Forwarded-For.
    @Test func aProxiedConnectionCountsForItsBrowserAndAnUntrustedPeerForItself() throws {
        let quota = SharedAddressQuota(limit: 1)
        var forwarded = HTTPHeaders()
        forwarded.add(name: "X-Forwarded-For", value: "198.51.100.4")
        let first = try #require(ConnectionAddress.accept(peer: "127.0.0.1", quota: quota, trustedProxies: ["127.0.0.1"], owner: { 33 }).admitted)
        #expect(quota.open == ["uid:33": 1], "counted as the proxy (its account) until its first request")
        #expect(ConnectionAddress.accept(peer: "127.0.0.1", quota: quota, trustedProxies: ["127.0.0.1"], owner: { 33 }).admitted == nil,
                "connections that never ask anything cannot fill the gateway from the proxy's address")
        #expect(first.admit(forwarded))
        let second = try #require(ConnectionAddress.accept(peer: "127.0.0.1", quota: quota, trustedProxies: ["127.0.0.1"], owner: { 33 }).admitted)
        #expect(!second.admit(forwarded), "the same browser is over its cap")
        #expect(!second.admit(HTTPHeaders()), "a refused connection stays refused")
        let direct = try #require(ConnectionAddress.accept(peer: "192.0.2.9", quota: quota, trustedProxies: ["127.0.0.1"]).admitted)
        #expect(direct.admit(forwarded))
        #expect(ConnectionAddress.accept(peer: "192.0.2.9", quota: quota, trustedProxies: ["127.0.0.1"]).admitted == nil)
        #expect(quota.open == ["198.51.100.4": 1, "192.0.2.9": 1])
        first.release(); second.release(); direct.release()
        #expect(quota.open.isEmpty)
    }
}
