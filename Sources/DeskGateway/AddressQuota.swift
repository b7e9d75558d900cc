/// Open connections by remote address, so that one machine cannot hold every slot of the
/// gateway. Loopback addresses are not counted: behind a proxy every browser is 127.0.0.1,
/// and the gateway's overall cap still holds for them.
struct AddressQuota: Sendable {
    private(set) var open: [String: Int] = [:]

    /// Counts a connection from `address` in, unless `limit` from there are open already.
    mutating func admit(_ address: String?, limit: Int) -> Bool {
        guard let address, !GatewayConfiguration.isLoopback(address) else { return true }
        let count = open[address, default: 0]
        guard count < limit else { return false }
        open[address] = count + 1
        return true
    }

    /// Counts a connection `admit` let in out again.
    mutating func release(_ address: String?) {
        guard let address, let count = open[address] else { return }
        open[address] = count > 1 ? count - 1 : nil
    }
}
