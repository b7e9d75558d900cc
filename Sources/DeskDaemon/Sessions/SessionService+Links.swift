import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc
import Logging

// MARK: Browser links

extension SessionService {
    /// `deskctl url --revoke`: every unused link to the session on `display` opens nothing from
    /// now on, and every browser connected to it is closed; for its owner or an admin.
    /// With `share`, only that share: its link if unused, and the browser it opened.
    func revokeLinks(_ display: Display, share: String? = nil, caller: Caller) async throws(DeskError) -> LinkRevocation {
        let managed = try await session(on: display, caller: caller, action: "take back the links of")
        let revoked: LinkRevocation
        if let share {
            let inUse = environment.browsers.sharesInUse(sessionID: managed.id)[share] != nil
            guard let links = environment.links.revoke(sessionID: managed.id, share: share, inUse: inUse) else {
                throw DeskError(.badRequest, "\(UrlRequest.isPlausibleShare(share) ? share : "that share") is no share of \(display) that is still open; deskctl url --shares \(display) lists them.")
            }
            let browsers = environment.browsers.disconnect(sessionID: managed.id, share: share)
            revoked = LinkRevocation(display: display, links: links, browsers: browsers, viewOnlyOnly: false)
        } else {
            revoked = revokeLinks(of: managed.id, on: display, viewOnlyOnly: false)
        }
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
    /// With `viewers`, a link only those accounts may use, each logged in to the portal in the
    /// browser that opens it (the portal's own sharing; a link without is anyone's who holds it).
    func browserLink(_ display: Display, viewOnly: Bool, ttlSeconds: Int, viewers: [String] = [], hostName: String, caller: Caller) async throws(DeskError) -> BrowserLink {
        let managed = try await session(on: display, caller: caller, action: "open in a browser")
        let base = try browserLinkBase(ttlSeconds: ttlSeconds, hostName: hostName, example: "deskctl url \(display) --ttl 10m")
        let named = try Self.viewerAccounts(viewers)
        return try await browserLink(to: managed, base: base, viewOnly: viewOnly, ttlSeconds: ttlSeconds, viewers: named, caller: caller)
    }

    /// The accounts a link is for, by name: each must be an account here (a link for a name
    /// that is none would open for nobody, or for whoever gets that name later).
    static func viewerAccounts(_ names: [String]) throws(DeskError) -> [UserAccount] {
        var accounts: [UserAccount] = []
        for name in names {
            guard let account = UserAccount.named(name) else {
                let shown = name.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F } ? String(name.prefix(64)) : "a name"
                throw DeskError(.unknownUser, "\(shown) is no account here; name the accounts that may watch, as they log in to the portal.")
            }
            if !accounts.contains(where: { $0.uid == account.uid }) { accounts.append(account) }
        }
        return accounts
    }

    /// The session's shares: links not yet used, and the browsers used links opened (by share).
    func shares(of display: Display, caller: Caller) async throws(DeskError) -> [LinkShare] {
        let managed = try await session(on: display, caller: caller, action: "list the shares of")
        let now = ContinuousClock.now, wall = Date()
        func name(_ uid: UInt32) -> String { UserAccount.withUID(uid)?.name ?? "uid \(uid)" }
        var shares = environment.links.unused(sessionID: managed.id).map { link in
            LinkShare(share: link.grant.share, viewOnly: link.grant.viewOnly, viewers: link.grant.viewerNames, issuedBy: name(link.grant.issuedTo),
                      expiresAt: wall.addingTimeInterval(Double((link.expires - now).components.seconds)), browsers: 0)
        }
        for (share, used) in environment.browsers.sharesInUse(sessionID: managed.id) {
            if let index = shares.firstIndex(where: { $0.share == share }) { shares[index].browsers += used.browsers; continue }
            shares.append(LinkShare(share: share, viewOnly: used.link.viewOnly, viewers: used.link.viewerNames, issuedBy: name(used.link.issuedTo),
                                    expiresAt: nil, browsers: used.browsers))
        }
        return shares.sorted { ($0.expiresAt ?? .distantPast, $0.share) < ($1.expiresAt ?? .distantPast, $1.share) }
    }

    /// The link itself, to this very session (not to whatever holds its display by now).
    private func browserLink(to managed: ManagedSession, base: String, viewOnly: Bool, ttlSeconds: Int, viewers: [UserAccount] = [],
                             caller: Caller) async throws(DeskError) -> BrowserLink {
        let session = await managed.session
        let display = session.display
        try checkGatewayCanLogIn(to: session.rfbSocket == nil)
        guard await managed.isRunning else {
            throw DeskError(.noSuchSession, "the session on \(display) is \(session.state.rawValue); a link is for a running session (see deskctl list).")
        }
        let grant = BrowserLinks.Grant(sessionID: managed.id, display: display, owner: session.uid, issuedTo: caller.uid, viewOnly: viewOnly,
                                       viewers: viewers.isEmpty ? nil : Set(viewers.map(\.uid)),
                                       viewerNames: viewers.isEmpty ? nil : viewers.map(\.name))
        let token = try environment.links.mint(grant, ttl: .seconds(ttlSeconds))
        return BrowserLink(display: display, url: base + "/open#token=" + token,
                           expiresAt: Date().addingTimeInterval(Double(ttlSeconds)), viewOnly: viewOnly, share: grant.share,
                           viewers: grant.viewerNames)
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
