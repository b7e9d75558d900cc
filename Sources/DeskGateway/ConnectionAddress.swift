import NIOHTTP1
import Synchronization

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
    /// The peer, when it is one of the trusted proxies: its requests may name a user by single sign-on.
    let proxy: String?

    /// nil when the peer's own address is over its cap.
    static func accept(peer: String?, quota: SharedAddressQuota, trustedProxies: Set<String>) -> ConnectionAddress? {
        guard quota.admit(peer) else { return nil }
        if let peer, trustedProxies.contains(peer) { return ConnectionAddress(.awaitingRequest(proxy: peer), quota: quota, proxy: peer) }
        return ConnectionAddress(.counted(peer), quota: quota, proxy: nil)
    }

    private init(_ state: State, quota: SharedAddressQuota, proxy: String?) {
        self.state = Mutex(state)
        self.quota = quota
        self.proxy = proxy
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

    /// The address this connection counts against (the browser's, behind a trusted proxy once
    /// its first request came); nil before that or when unknown.
    var address: String? {
        state.withLock { state in
            if case .counted(let address) = state { return address }
            return nil
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
