@testable import DeskGateway
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

    @Test func loopbackAndUnknownPeersAreNotCountedHere() {
        var quota = AddressQuota()
        let loopback = (0..<100).map { _ in quota.admit("127.0.0.1", limit: 1) }
        let unknown = [quota.admit(nil, limit: 1), quota.admit(nil, limit: 1)]
        #expect(!loopback.contains(false), "behind a proxy every browser is 127.0.0.1")
        #expect(unknown == [true, true])
        #expect(quota.open.isEmpty)
    }
}
