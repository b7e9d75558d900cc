import NIOHTTP1
import Synchronization

/// Open connections by remote address, so that one machine cannot hold every slot of the
/// gateway. Loopback counts like any other address: a local user is one machine too. Behind the
/// admin's reverse proxy every browser comes from the proxy, so there the address counted is the
/// browser's, from X-Forwarded-For (`ForwardedFor`), for proxies the admin names as trusted.
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

/// The browser's address behind trusted proxies, from X-Forwarded-For.
enum ForwardedFor {
    /// The proxy appends the address it was connected from, so only the list's last entry is
    /// its word; anything left of it was written by whoever connected to the proxy and proves
    /// nothing. That last entry may be a trusted address itself (a local user going through
    /// nginx on this host is 127.0.0.1), and then counts as that address, not as whatever it
    /// wrote before. Without the header, the peer itself is the address.
    static func client(peer: String, headers: HTTPHeaders) -> String {
        let hops = headers[canonicalForm: "X-Forwarded-For"].flatMap { $0.split(separator: ",") }
            .map { hop in String(hop.filter { $0 != " " && $0 != "\t" }).lowercased() }.filter { !$0.isEmpty }
        return hops.last ?? peer
    }
}

/// Which address one connection is counted against: its peer's, from when it is accepted; or,
/// when the peer is a trusted proxy, the peer's until its first request and the browser's from
/// then on (a proxy that keeps connections alive for many browsers has its connection counted
/// for the first). Counting the proxy's connections before their request keeps anyone who can
/// connect from the proxy's address (any local user, for a proxy on loopback) from filling the
/// gateway with connections that never ask anything.
final class ConnectionAddress: Sendable {
    private enum State {
        case awaitingRequest(proxy: String)
        case counted(String?)
        case refused
    }

    private let state: Mutex<State>
    private let quota: SharedAddressQuota

    /// nil when the peer's own address is over its cap.
    static func accept(peer: String?, quota: SharedAddressQuota, trustedProxies: Set<String>) -> ConnectionAddress? {
        guard quota.admit(peer) else { return nil }
        if let peer, trustedProxies.contains(peer) { return ConnectionAddress(.awaitingRequest(proxy: peer), quota: quota) }
        return ConnectionAddress(.counted(peer), quota: quota)
    }

    private init(_ state: State, quota: SharedAddressQuota) {
        self.state = Mutex(state)
        self.quota = quota
    }

    /// Whether the connection may go on, given a request's headers; the first request of a
    /// proxied connection counts it in by the browser's address.
    func admit(_ headers: HTTPHeaders) -> Bool {
        state.withLock { state in
            switch state {
            case .counted: return true
            case .refused: return false
            case .awaitingRequest(let proxy):
                let client = ForwardedFor.client(peer: proxy, headers: headers)
                quota.release(proxy)
                guard quota.admit(client) else {
                    state = .refused
                    return false
                }
                state = .counted(client)
                return true
            }
        }
    }

    /// At the connection's close.
    func release() {
        let counted: String? = state.withLock { state in
            defer { state = .refused }
            switch state {
            case .counted(let address): return address
            case .awaitingRequest(let proxy): return proxy
            case .refused: return nil
            }
        }
        quota.release(counted)
    }
}

/// The gateway's one `AddressQuota`, shared by its connections.
final class SharedAddressQuota: Sendable {
    private let quota = Mutex(AddressQuota())
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func admit(_ address: String?) -> Bool { quota.withLock { $0.admit(address, limit: limit) } }
    func release(_ address: String?) { quota.withLock { $0.release(address) } }
    var open: [String: Int] { quota.withLock { $0.open } }
}
