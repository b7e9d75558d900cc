import DeskFrontProtocol

/// deskd's browser gateway (`[web]` in deskd.toml): where it listens, its certificate, where
/// noVNC's files are, and which way the clipboard may go. Off unless `web.listen` is set.
public struct WebSettings: Sendable, Equatable {
    /// Which way cut text may cross the gateway: the gateway's own setting, as the file names it.
    public typealias Clipboard = GatewayConfiguration.Clipboard
    /// The oldest TLS the gateway speaks: the gateway's own setting, as the file names it.
    public typealias TLSMinimum = GatewayConfiguration.TLSMinimum

    /// The address and port the gateway listens on; nil: no gateway.
    public var host: String?
    public var port = 8443
    public var tlsCertificate: String?
    public var tlsKey: String?
    public var tlsMinimum = TLSMinimum.tls12
    public var novncDirectory = "/usr/share/novnc"
    public var clipboard = Clipboard.both
    /// The URL links start with, when a proxy in front of the gateway serves it elsewhere
    /// (nginx or Apache doing TLS for a gateway on 127.0.0.1). nil: the gateway's own address.
    public var publicURL: String?
    /// Open connections in all (pages, logins, live updates and desktops); live updates may take half.
    public var maxConnections = GatewayConfiguration.Limits().maxConnections
    /// Open connections of one client (a local account, a remote address, an IPv6 /64); behind
    /// `trustedProxies`, the browser's address.
    public var maxConnectionsPerAddress = GatewayConfiguration.Limits().maxConnectionsPerAddress
    /// Reverse proxies whose X-Forwarded-For is believed.
    public var trustedProxies: Set<String> = []
    /// A relay silent both ways, unanswered pings included, for this long is closed.
    public var idleTimeoutSeconds = Int(GatewayConfiguration.Limits().idleTimeout.components.seconds)
    /// The account deskd-web runs as, and the only one deskd's front socket answers.
    public var user = "deskd-web"
    /// Accounts that may not log in to the portal, whatever their password.
    public var denyUsers: Set<String> = ["root"]
    /// The header a trusted proxy names its signed-in user in (single sign-on done at the proxy);
    /// nil: the portal logs in with passwords only.
    public var singleSignOnHeader: String?
    /// A portal login with no request for this long is over.
    public var sessionIdleSeconds = 15 * 60
    /// And any portal login after this long.
    public var sessionLifetimeSeconds = 12 * 3600

    public init() {}

    public var isOn: Bool { host != nil }
    public var usesTLS: Bool { tlsCertificate != nil }
    public var isLoopback: Bool { host == "127.0.0.1" || host == "localhost" }

    /// Where a link points: `https://HOST:PORT` (or the public URL), without a trailing slash.
    /// `hostName` stands in for an address that names every interface.
    public func baseURL(hostName: String) -> String? {
        if let publicURL { return publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL }
        guard let host else { return nil }
        let name = host == "0.0.0.0" ? hostName : host
        return "\(usesTLS ? "https" : "http")://\(name):\(port)"
    }
}
