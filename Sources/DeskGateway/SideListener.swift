import NIOCore

/// A listener deskd runs beside its control socket and can serve without: the browser gateway
/// and the metrics endpoint.
public protocol SideListener: Sendable {
    /// "gateway" or "metrics": the word in logs, `deskctl status` and the metric's label.
    var name: String { get }
    var host: String { get }
    /// As configured (0: the kernel picks one).
    var requestedPort: Int { get }
    /// Everything that can fail at start (its TLS files, the bind), once: the bound listener.
    func listen() async throws(GatewayError) -> any Channel
    /// Serves on `server` until a graceful shutdown or cancellation, then closes what it opened.
    func serve(_ server: any Channel) async
    /// Called when the service ends without ever having listened.
    func abandon(_ lastError: GatewayError)
}

extension SideListener {
    public func abandon(_ lastError: GatewayError) {}
}
