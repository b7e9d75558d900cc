import FoundationEssentials

/// Where a browser's request came from, as the front saw it: its address, which the audit trail
/// shows, and its client, which every per-client bound counts by: "uid:N" for a peer on this host
/// (the account that owns its end of the connection), a remote IPv4 address, an IPv6 /64 as
/// "PREFIX::/64", or "loopback" where the kernel could not say.
public struct WebPeer: Sendable, Equatable, Codable {
    public var address: String
    public var client: String

    public init(address: String, client: String) {
        self.address = address
        self.client = client
    }
}
