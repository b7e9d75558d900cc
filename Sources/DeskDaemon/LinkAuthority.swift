import DeskCore
import DeskGateway
import Logging

/// deskd's answer to the gateway: which link a token is, and what its cookie lets a browser do.
/// The gateway never sees a password until a cookie is spent, and then only the one session's.
public struct LinkAuthority: GatewayAuthority {
    let service: SessionService

    public init(service: SessionService) {
        self.service = service
    }

    public func exchange(token: String) async -> (cookie: String, viewOnly: Bool)? {
        guard let traded = service.environment.links.exchange(token: token), makerMayStillOpen(traded.grant) else { return nil }
        return (traded.cookie, traded.grant.viewOnly)
    }

    public func redeem(cookie: String) async -> GatewayGrant? {
        guard let (grant, epoch) = service.environment.links.redeem(cookie: cookie), makerMayStillOpen(grant),
              let managed = await service.environment.registry.session(id: grant.sessionID),
              let login = await managed.gatewayLogin(viewOnly: grant.viewOnly) else { return nil }
        service.environment.logger.info("browser connected through the gateway", metadata: [
            "session.display": "\(grant.display)", "session.user": "\(managed.user)", "link.issuedTo": "\(grant.issuedTo)",
            "link.viewOnly": "\(grant.viewOnly)",
        ])
        return GatewayGrant(sessionID: grant.sessionID, endpoint: login.endpoint, address: login.address, xvnc: login.xvnc, password: login.password, viewOnly: grant.viewOnly, epoch: epoch)
    }

    public func isRevoked(_ grant: GatewayGrant) -> Bool {
        service.environment.links.isRevoked(sessionID: grant.sessionID, viewOnly: grant.viewOnly, since: grant.epoch)
    }

    /// A link an admin made to another user's session opens only while its maker is still an
    /// admin: one who has left the admin group since cannot hand the desktop out any more.
    private func makerMayStillOpen(_ grant: BrowserLinks.Grant) -> Bool {
        guard grant.issuedTo != grant.owner, !service.isAdmin(grant.issuedTo) else { return true }
        service.environment.logger.notice("link refused: its maker is no longer an admin", metadata: [
            "session.display": "\(grant.display)", "link.issuedTo": "\(grant.issuedTo)", "session.uid": "\(grant.owner)",
        ])
        return false
    }
}

extension WebSettings {
    /// What the gateway is told: where to listen, its certificate, noVNC, the clipboard, and the
    /// origin pages come from when a proxy serves them.
    public var gatewayConfiguration: GatewayConfiguration? {
        guard let host else { return nil }
        return GatewayConfiguration(
            host: host, port: port, tlsCertificatePath: tlsCertificate, tlsKeyPath: tlsKey, novncDirectory: novncDirectory,
            clipboard: clipboard, limits: GatewayConfiguration.Limits(maxConnectionsPerAddress: maxConnectionsPerAddress, idleTimeout: .seconds(idleTimeoutSeconds)),
            publicOrigin: publicURL.map(Self.origin(of:)), trustedProxies: trustedProxies, tlsMinimum: tlsMinimum
        )
    }

    /// "https://desk.example.org/deskd" → "https://desk.example.org".
    static func origin(of url: String) -> String {
        let afterScheme = url.firstRange(of: "://").map { url[$0.upperBound...] } ?? Substring(url)
        let host = afterScheme.prefix { $0 != "/" }
        return String(url[..<afterScheme.startIndex]) + host
    }
}

extension SessionService {
    /// The browser gateway `[web]` asks for, answering to this service's links; nil when it is off.
    public func browserGateway(logger: Logger) -> Gateway? {
        guard let settings = configuration.web.gatewayConfiguration else { return nil }
        let gateway = Gateway(configuration: settings, authority: LinkAuthority(service: self), logger: logger,
                              metricsFactory: environment.metrics.factory)
        // Sessions close their browsers when they end, and count them for the metrics.
        environment.browsers.attach(gateway)
        return gateway
    }

    /// `/metrics` on the listener `[metrics] listen` names; nil when it is off.
    public func metricsEndpoint(logger: Logger) -> MetricsEndpoint? {
        guard let listen = configuration.metricsListen else { return nil }
        return MetricsEndpoint(host: listen.host, port: listen.port, logger: logger) { [self] in await metricsText() }
    }
}
