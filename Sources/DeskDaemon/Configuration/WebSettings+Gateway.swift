import DeskCore
import DeskFrontProtocol

extension WebSettings {
    /// What the gateway is told: where to listen, its certificate, noVNC, the clipboard, and the
    /// origin pages come from when a proxy serves them.
    public var gatewayConfiguration: GatewayConfiguration? {
        guard let host else { return nil }
        return GatewayConfiguration(
            host: host, port: port, tlsCertificatePath: tlsCertificate, tlsKeyPath: tlsKey, novncDirectory: novncDirectory,
            clipboard: clipboard, limits: GatewayConfiguration.Limits(maxConnections: maxConnections, maxConnectionsPerAddress: maxConnectionsPerAddress, idleTimeout: .seconds(idleTimeoutSeconds)),
            publicOrigin: publicURL.map(Self.origin(of:)), trustedProxies: trustedProxies, tlsMinimum: tlsMinimum,
            singleSignOnHeader: singleSignOnHeader
        )
    }

    /// "https://desk.example.org/deskd" → "https://desk.example.org".
    static func origin(of url: String) -> String {
        let afterScheme = url.firstRange(of: "://").map { url[$0.upperBound...] } ?? Substring(url)
        let host = afterScheme.prefix { $0 != "/" }
        return String(url[..<afterScheme.startIndex]) + host
    }
}
