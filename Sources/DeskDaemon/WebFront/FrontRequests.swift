import DeskCore
import DeskGateway
import DeskLinux
import Glibc
import Logging

/// deskd's answers to its web front: which link a token is, what a cookie lets a browser do,
/// and the desktop's socket for a relay it granted, logged in to by deskd. The front never sees
/// a password, and a front that has been taken over gets no desktop without a live link.
struct FrontRequests: Sendable {
    let service: SessionService
    /// How long logging in to a desktop may take (the gateway's handshake timeout).
    let handshakeTimeout: Duration

    var environment: SessionEnvironment { service.environment }
    private var logger: Logger { environment.logger }

    /// Answers the requests that need no wait, in the order they came (counts must not be
    /// taken out of order); false for the others, which `handle` answers.
    func handleAtOnce(_ request: FrontRequest, from front: FrontPeer) -> Bool {
        switch request {
        case .relayEnded(let relay):
            environment.browsers.end(relay, of: front)
        case .counts(let now):
            let earlier = front.counts.withLock { counts in
                defer { counts = now }
                return counts
            }
            environment.gatewayMetrics.absorb(from: earlier, to: now)
        case .listenerFailed(let listener, let reason):
            logger.error("the web front cannot serve a listener deskd passed it", metadata: ["listener": "\(listener)", "reason": "\(reason)"])
            environment.listeners.frontFailed(listener, reason: reason)
        case .exchange, .redeem, .connect, .scrape:
            return false
        }
        return true
    }

    func handle(_ request: FrontRequest, from front: FrontPeer) async {
        switch request {
        case .exchange(let call, let token):
            let traded = exchange(token: token)
            front.send(.exchanged(call: call, cookie: traded?.cookie, viewOnly: traded?.viewOnly ?? false))
        case .redeem(let call, let cookie):
            front.send(.redeemed(call: call, grant: await redeem(cookie: cookie, front: front)))
        case .connect(let call, let relay):
            switch await openDesktop(relay: relay, front: front) {
            case .success(let fd):
                front.send(.connected(call: call, refusal: nil), descriptors: [fd])
                close(fd)
            case .failure(let refusal):
                front.send(.connected(call: call, refusal: refusal))
            }
        case .scrape(let call):
            front.send(.scraped(call: call, text: await service.metricsText()))
        case .relayEnded, .counts, .listenerFailed:
            _ = handleAtOnce(request, from: front)
        }
    }

    private func exchange(token: String) -> (cookie: String, viewOnly: Bool)? {
        guard let traded = environment.links.exchange(token: token), makerMayStillOpen(traded.grant) else { return nil }
        return (traded.cookie, traded.grant.viewOnly)
    }

    private func redeem(cookie: String, front: FrontPeer) async -> GatewayGrant? {
        guard let (grant, epoch) = environment.links.redeem(cookie: cookie), makerMayStillOpen(grant),
              let managed = await environment.registry.session(id: grant.sessionID),
              let login = await managed.gatewayLogin(viewOnly: grant.viewOnly) else { return nil }
        logger.info("browser connected through the gateway", metadata: [
            "session.display": "\(grant.display)", "session.user": "\(managed.user)", "link.issuedTo": "\(grant.issuedTo)",
            "link.viewOnly": "\(grant.viewOnly)",
        ])
        let relay = environment.browsers.grant(sessionID: grant.sessionID, viewOnly: grant.viewOnly, epoch: epoch, login: login, front: front)
        return GatewayGrant(sessionID: grant.sessionID, viewOnly: grant.viewOnly, relay: relay)
    }

    /// Only for a relay this front was granted and that is still open: a revoke or the
    /// session's end since the cookie was spent removed it, and then there is nothing to open.
    private func openDesktop(relay number: UInt64, front: FrontPeer) async -> Result<Int32, DesktopRefusal> {
        guard let relay = environment.browsers.relay(number, of: front),
              !environment.links.isRevoked(sessionID: relay.sessionID, viewOnly: relay.viewOnly, since: relay.epoch) else {
            return .failure(DesktopRefusal("relay \(number) is not open: its link was taken back, or its session ended"))
        }
        let login = relay.login, timeout = handshakeTimeout
        let opened = await onDedicatedThread { Result { () throws(RFBClient.Failure) in try login.open(timeout: timeout) } }
        return opened.mapError { DesktopRefusal($0.description) }
    }

    /// A link an admin made to another user's session opens only while its maker is still an
    /// admin: one who has left the admin group since cannot hand the desktop out any more.
    private func makerMayStillOpen(_ grant: BrowserLinks.Grant) -> Bool {
        guard grant.issuedTo != grant.owner, !service.isAdmin(grant.issuedTo) else { return true }
        logger.notice("link refused: its maker is no longer an admin", metadata: [
            "session.display": "\(grant.display)", "link.issuedTo": "\(grant.issuedTo)", "session.uid": "\(grant.owner)",
        ])
        return false
    }
}
