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
    /// Each proxy appends the address it was connected from, so the list is read from its end:
    /// entries a trusted proxy added are passed over, and the first address no trusted proxy
    /// holds is the browser's. Anything left of it was written by the browser and proves
    /// nothing. Without the header, the peer itself is the address.
    static func client(peer: String, headers: HTTPHeaders, trustedProxies: Set<String>) -> String {
        let hops = headers[canonicalForm: "X-Forwarded-For"].flatMap { $0.split(separator: ",") }
            .map { hop in String(hop.filter { $0 != " " && $0 != "\t" }).lowercased() }.filter { !$0.isEmpty }
        return hops.reversed().first { !trustedProxies.contains($0) } ?? hops.first ?? peer
    }
}

/// Which address one connection is counted against: its peer's, decided when it is accepted;
/// or, when the peer is a trusted proxy, the browser's, decided at its first request (a proxy
/// that keeps connections alive for many browsers has its connection counted for the first).
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
        if let peer, trustedProxies.contains(peer) { return ConnectionAddress(.awaitingRequest(proxy: peer), quota: quota) }
        guard quota.admit(peer) else { return nil }
        return ConnectionAddress(.counted(peer), quota: quota)
    }

    private init(_ state: State, quota: SharedAddressQuota) {
        self.state = Mutex(state)
        self.quota = quota
    }

    /// Whether the connection may go on, given a request's headers; the first request of a
    /// proxied connection counts it in by the browser's address.
    func admit(_ headers: HTTPHeaders, trustedProxies: Set<String>) -> Bool {
        state.withLock { state in
            switch state {
            case .counted: return true
            case .refused: return false
            case .awaitingRequest(let proxy):
                let client = ForwardedFor.client(peer: proxy, headers: headers, trustedProxies: trustedProxies)
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
            guard case .counted(let address) = state else { return nil }
            return address
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
