import DeskFrontProtocol
import NIOHTTP1
import Synchronization

/// Which client one connection is counted against (`BrowserClient`): its peer's, from when it is
/// accepted; or, when the peer is a trusted proxy, the peer's until its first request and the
/// browser's (by the address the proxy appended to X-Forwarded-For) from then on (a proxy that keeps connections alive for many browsers has its connection counted
/// for the first). Counting the proxy's connections before their request keeps anyone who can
/// connect from the proxy's address (any local user, for a proxy on loopback) from filling the
/// gateway with connections that never ask anything.
final class ConnectionAddress: Sendable {
    private enum State {
        case awaitingRequest(proxy: String, client: String)
        /// The browser's address (for the audit trail) and its client key (for every bound).
        case counted(address: String?, client: String?)
        case refused
    }

    private let state: Mutex<State>
    private let quota: SharedAddressQuota
    /// Whether an address is one of this host's: a browser there behind the proxy is local too.
    private let isThisHost: @Sendable (String) -> Bool
    /// The peer, when it is one of the trusted proxies: its requests may name a user by single sign-on.
    let proxy: String?

    /// What became of a new connection.
    enum Acceptance {
        case admitted(ConnectionAddress)
        /// Its client is over its cap.
        case overCapacity
        /// It comes from this host, and the kernel would not say which account made it.
        case unknownOwner

        var admitted: ConnectionAddress? {
            if case .admitted(let address) = self { return address }
            return nil
        }
    }

    /// `owner` tells who made the peer's end of the connection, if it is on this host (the
    /// kernel's answer). `local`: the address the connection was made to; `isThisHost`: whether
    /// an address is one of this host's (a peer there whose owner is unknown is refused).
    static func accept(peer: String?, local: String? = nil, quota: SharedAddressQuota, trustedProxies: Set<String>,
                       isThisHost: @escaping @Sendable (String) -> Bool = { _ in false }, owner: () -> UInt32? = { nil }) -> Acceptance {
        let peer = peer.map(BrowserClient.unmapped)
        var client: String?
        if let peer {
            guard let key = BrowserClient.key(address: peer, local: local, isThisHost: isThisHost, owner: owner) else { return .unknownOwner }
            client = key
        }
        guard quota.admit(client) else { return .overCapacity }
        if let peer, let client, trustedProxies.contains(peer) {
            return .admitted(ConnectionAddress(.awaitingRequest(proxy: peer, client: client), quota: quota, proxy: peer, isThisHost: isThisHost))
        }
        return .admitted(ConnectionAddress(.counted(address: peer, client: client), quota: quota, proxy: nil, isThisHost: isThisHost))
    }

    private init(_ state: State, quota: SharedAddressQuota, proxy: String?, isThisHost: @escaping @Sendable (String) -> Bool) {
        self.state = Mutex(state)
        self.quota = quota
        self.proxy = proxy
        self.isThisHost = isThisHost
    }

    /// Whether the connection may go on, given a request's headers; the first request of a
    /// proxied connection counts it in by the browser's address.
    func admit(_ headers: HTTPHeaders) -> Bool {
        state.withLock { state in
            switch state {
            case .counted: return true
            case .refused: return false
            case .awaitingRequest(let proxy, let proxyClient):
                let browser = BrowserClient.unmapped(ForwardedFor.client(peer: proxy, headers: headers))
                // Behind the proxy the kernel cannot say who a browser on this host is (loopback, or
                // one of the host's own addresses): all of them are one.
                let client = BrowserClient.key(address: browser, isThisHost: isThisHost, owner: { nil }) ?? BrowserClient.loopbackBehindProxy
                quota.release(proxyClient)
                guard quota.admit(client) else {
                    state = .refused
                    return false
                }
                state = .counted(address: browser, client: client)
                return true
            }
        }
    }

    /// The browser's address (behind a trusted proxy, once its first request came), as the
    /// audit trail shows it; nil before that or when unknown.
    var address: String? {
        state.withLock { state in
            if case .counted(let address, _) = state { return address }
            return nil
        }
    }

    /// The client this connection counts as (`BrowserClient`); nil before a proxied
    /// connection's first request, or when the peer has no address.
    var client: String? {
        state.withLock { state in
            if case .counted(_, let client) = state { return client }
            return nil
        }
    }

    /// At the connection's close.
    func release() {
        let counted: String? = state.withLock { state in
            defer { state = .refused }
            switch state {
            case .counted(_, let client): return client
            case .awaitingRequest(_, let client): return client
            case .refused: return nil
            }
        }
        quota.release(counted)
    }
}
