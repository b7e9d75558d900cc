import DeskCore
import DeskGateway
import Logging

/// deskd's answer to the gateway: which link a token is, and what its cookie lets a browser do.
/// The gateway never sees a password until a cookie is spent, and then only the one session's.
public struct LinkAuthority: GatewayAuthority {
    private let links: BrowserLinks
    private let registry: SessionRegistry
    private let logger: Logger
    /// Whether a uid is an admin now (a reload or a change of the group database may say no).
    private let isAdmin: @Sendable (UInt32) -> Bool

    public init(service: SessionService) {
        self.links = service.environment.links
        self.registry = service.environment.registry
        self.logger = service.environment.logger
        self.isAdmin = { [service] in service.isAdmin($0) }
    }

    public func exchange(token: String) async -> (cookie: String, viewOnly: Bool)? {
        guard let traded = links.exchange(token: token), makerMayStillOpen(traded.grant) else { return nil }
        return (traded.cookie, traded.grant.viewOnly)
    }

    public func redeem(cookie: String) async -> GatewayGrant? {
        guard let (grant, epoch) = links.redeem(cookie: cookie), makerMayStillOpen(grant),
              let managed = await registry.session(id: grant.sessionID),
              let login = await managed.gatewayLogin(viewOnly: grant.viewOnly) else { return nil }
        logger.info("browser connected through the gateway", metadata: [
            "session.display": "\(grant.display)", "session.user": "\(managed.user)", "link.issuedTo": "\(grant.issuedTo)",
            "link.viewOnly": "\(grant.viewOnly)",
        ])
        return GatewayGrant(sessionID: grant.sessionID, endpoint: login.endpoint, address: login.address, xvnc: login.xvnc, password: login.password, viewOnly: grant.viewOnly, epoch: epoch, hop: login.hop)
    }

    public func isRevoked(_ grant: GatewayGrant) -> Bool {
        links.isRevoked(sessionID: grant.sessionID, viewOnly: grant.viewOnly, since: grant.epoch)
    }

    /// A link an admin made to another user's session opens only while its maker is still an
    /// admin: one who has left the admin group since cannot hand the desktop out any more.
    private func makerMayStillOpen(_ grant: BrowserLinks.Grant) -> Bool {
        guard grant.issuedTo != grant.owner, !isAdmin(grant.issuedTo) else { return true }
        logger.notice("link refused: its maker is no longer an admin", metadata: [
            "session.display": "\(grant.display)", "link.issuedTo": "\(grant.issuedTo)", "session.uid": "\(grant.owner)",
        ])
        return false
    }
}
