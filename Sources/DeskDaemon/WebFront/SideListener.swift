import DeskFrontProtocol

/// A listener deskd runs beside its control socket and can serve without: the browser gateway
/// and the metrics endpoint.
protocol SideListener: Sendable {
    /// What a successful `listen` gives `serve`: the bound socket deskd hands its web front.
    associatedtype Bound: Sendable
    /// "gateway" or "metrics": the word in logs, `deskctl status` and the metric's label.
    var name: String { get }
    var host: String { get }
    /// As configured (0: the kernel picks one).
    var requestedPort: Int { get }
    /// Everything that can fail at start (its TLS files, the bind), once: the bound listener.
    func listen() async throws(GatewayError) -> Bound
    /// The port `bound` listens on.
    func port(of bound: Bound) -> Int?
    /// Serves on `bound` until a graceful shutdown or cancellation, then closes what it opened.
    func serve(_ bound: Bound) async
    /// Called when the service ends without ever having listened.
    func abandon(_ lastError: GatewayError)
}

extension SideListener {
    func abandon(_ lastError: GatewayError) {}
}
