import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc
import Logging

// MARK: Browser links

extension SessionService {
    /// `deskctl url --revoke`: every unused link to the session on `display` opens nothing from
    /// now on, and every browser connected to it is closed; for its owner or an admin.
    func revokeLinks(_ display: Display, caller: Caller) async throws(DeskError) -> LinkRevocation {
        let managed = try await session(on: display, caller: caller, action: "take back the links of")
        let revoked = revokeLinks(of: managed.id, on: display, viewOnlyOnly: false)
        let session = await managed.session
        logger.info("session links revoked", metadata: session.logMetadata.merging([
            "peer.uid": "\(caller.uid)", "links.revoked": "\(revoked.links)", "browsers.closed": "\(revoked.browsers)",
        ]) { $1 })
        return revoked
    }

    /// Links first, so no browser that is closed can come straight back through one of them.
    func revokeLinks(of sessionID: String, on display: Display, viewOnlyOnly: Bool) -> LinkRevocation {
        let links = environment.links.revoke(sessionID: sessionID, viewOnlyOnly: viewOnlyOnly)
        let browsers = environment.browsers.disconnect(sessionID: sessionID, viewOnlyOnly: viewOnlyOnly)
        return LinkRevocation(display: display, links: links, browsers: browsers, viewOnlyOnly: viewOnlyOnly)
    }

    /// A one-time link that opens the session on `display` in a browser through the gateway,
    /// for its owner or an admin, usable once within `ttlSeconds`.
    func browserLink(_ display: Display, viewOnly: Bool, ttlSeconds: Int, hostName: String, caller: Caller) async throws(DeskError) -> BrowserLink {
        let base = try browserLinkBase(ttlSeconds: ttlSeconds, hostName: hostName, example: "deskctl url \(display) --ttl 10m")
        let managed = try await session(on: display, caller: caller, action: "open in a browser")
        return try await browserLink(to: managed, base: base, viewOnly: viewOnly, ttlSeconds: ttlSeconds, caller: caller)
    }

    /// The link itself, to this very session (not to whatever holds its display by now).
    private func browserLink(to managed: ManagedSession, base: String, viewOnly: Bool, ttlSeconds: Int, caller: Caller) async throws(DeskError) -> BrowserLink {
        let session = await managed.session
        let display = session.display
        try checkGatewayCanLogIn(to: session.rfbSocket == nil)
        guard await managed.isRunning else {
            throw DeskError(.noSuchSession, "the session on \(display) is \(session.state.rawValue); a link is for a running session (see deskctl list).")
        }
        let token = try environment.links.mint(.init(sessionID: managed.id, display: display, owner: session.uid, issuedTo: caller.uid, viewOnly: viewOnly),
                                               ttl: .seconds(ttlSeconds))
        return BrowserLink(display: display, url: base + "/open#token=" + token,
                           expiresAt: Date().addingTimeInterval(Double(ttlSeconds)), viewOnly: viewOnly)
    }

    /// The gateway logs in to Xvnc with the session's password: over TCP, Xvnc must offer
    /// VncAuth (a session's Unix socket always does).
    private func checkGatewayCanLogIn(to tcpSession: Bool) throws(DeskError) {
        guard tcpSession, !configuration.vncExposure.allowsPasswordProbe else { return }
        throw DeskError(.gatewayOff, "desktops here offer viewers only \(configuration.vncExposure.securityTypes.joined(separator: ", ")) (network.security_types), and the gateway logs in with VncAuth; add \"VncAuth\" there, or use a native viewer.")
    }

    /// Where links start, once the gateway is on and the TTL is one a link may have; what
    /// `start --web` checks before it starts anything.
    func browserLinkBase(ttlSeconds: Int, hostName: String, example: String) throws(DeskError) -> String {
        let configuration = self.configuration
        guard let base = configuration.web.baseURL(hostName: hostName) else {
            throw DeskError(.gatewayOff, "the browser gateway is off on this host; an admin turns it on with listen in the [web] section of \(configuration.configurationFile ?? ConfigurationFile.defaultPath).")
        }
        guard (1...BrowserLink.maximumTTLSeconds).contains(ttlSeconds) else {
            throw DeskError(.invalidDuration, "a link may wait from 1s to 24h for its use, not \(ttlSeconds)s; for example: \(example).")
        }
        return base
    }

    /// A start that also hands out a browser link (`start --web`): refused before anything
    /// starts if no link could be made, so the caller never gets half of what they asked for.
    func startForBrowser(_ request: StartRequest, hostName: String, caller: Caller) async throws(DeskError) -> (Session, BrowserLink?) {
        let ttlSeconds = request.linkTTLSeconds ?? BrowserLink.defaultTTLSeconds
        let base = try browserLinkBase(ttlSeconds: ttlSeconds, hostName: hostName, example: "deskctl start --web --ttl 10m")
        try checkGatewayCanLogIn(to: configuration.vncExposure.usesTCP)
        try environment.links.checkRoom(for: caller.uid)
        let session = try await start(request, caller: caller)
        // The desktop is running either way. The link is to the session just started, found by
        // its id: if it has already ended, its display may be someone else's by now.
        guard let managed = await registry.session(id: session.id) else { return (session, nil) }
        let link = try? await browserLink(to: managed, base: base, viewOnly: false, ttlSeconds: ttlSeconds, caller: caller)
        return (session, link)
    }
}
