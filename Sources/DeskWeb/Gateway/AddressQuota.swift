/// Open connections by client (`BrowserClient`: a local account, a remote address, an IPv6 /64),
/// so that no one client can hold every slot of the gateway. Behind the admin's reverse proxy
/// every browser comes from the proxy, so there the client counted is the browser's address,
/// from X-Forwarded-For (`ForwardedFor`), for proxies the admin names as trusted.
struct AddressQuota: Sendable {
    private(set) var open: [String: Int] = [:]

    /// Counts a connection from `address` in, unless `limit` from there are open already. A peer
    /// without an address (not TCP) is not counted here; the gateway's overall cap still holds.
    mutating func admit(_ address: String?, limit: Int) -> Bool {
        guard let address else { return true }
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
