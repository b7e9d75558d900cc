/// deskd's side of the gateway: it minted the links, and it alone knows what they grant.
public protocol GatewayAuthority: Sendable {
    /// Trades a one-time link token for a short-lived, single-use cookie value (nil: unknown, used or expired).
    func exchange(token: String) async -> (cookie: String, viewOnly: Bool)?
    /// Redeems that cookie at the WebSocket upgrade, once.
    func redeem(cookie: String) async -> GatewayGrant?
    /// Whether the session's links were taken back after `grant`'s cookie was spent. Asked once
    /// the relay is registered: a revoke before that found nothing to close, one after finds it.
    func isRevoked(_ grant: GatewayGrant) -> Bool
}

extension GatewayAuthority {
    public func isRevoked(_ grant: GatewayGrant) -> Bool { false }
}
