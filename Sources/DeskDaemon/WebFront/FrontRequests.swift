import DeskCore
import DeskFrontProtocol
import DeskLinux
import Glibc
import Logging

/// deskd's answers to its web front: which link a token is, and what a cookie lets a browser
/// do, with the desktop's socket for the relay it granted, logged in to by deskd. The front never sees
/// a password, and a front that has been taken over gets no desktop without a live link.
struct FrontRequests: Sendable {
    let service: SessionService
    /// How long logging in to a desktop may take (the gateway's handshake timeout).
    let handshakeTimeout: Duration
    /// Desktop logins under way for every front together: each holds a thread and a socket.
    let loginsUnderWay = InFlightLimit(32)
    /// Portal logins and their cookies.
    let portal: WebPortal
    /// The portal's file calls and the transfers under way.
    let files: WebFiles

    /// A browser's address or client as the front says it: printable and short, or "?" (it
    /// reaches the audit trail and the throttle's table).
    static func address(_ text: String) -> String {
        text.utf8.count <= 64 && !text.isEmpty && text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) ? text : "?"
    }

    static func peer(address: String, client: String) -> WebPeer {
        WebPeer(address: Self.address(address), client: Self.address(client))
    }

    /// What a request did to its front's connection.
    enum Outcome {
        /// Answered (or needs no answer).
        case handled
        /// Needs a wait: `handle` answers it, in a task.
        case later
        /// Not what a front sends: its connection ends.
        case cutOff(String)
    }

    var environment: SessionEnvironment { service.environment }
    private var logger: Logger { environment.logger }

    /// Answers the requests that need no wait, in the order they came (counts must not be
    /// taken out of order).
    func handleAtOnce(_ request: FrontRequest, from front: FrontPeer, isOffered: (String) -> Bool) -> Outcome {
        switch request {
        case .relayEnded(let relay):
            environment.browsers.end(relay, of: front)
        case .counts(let now):
            guard now.isPlausible else { return .cutOff("its counts are out of range") }
            let earlier = front.counts.withLock { counts in
                defer { counts = now }
                return counts
            }
            environment.gatewayMetrics.absorb(from: earlier, to: now)
        case .listenerFailed(let listener, let reason):
            // Only a listener deskd passed it, and a reason of a line: it reaches status and the log.
            guard isOffered(listener) else { return .cutOff("it named a listener deskd never passed it") }
            let sentence = String(reason.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(300))
            logger.error("the web front cannot serve a listener deskd passed it", metadata: ["listener": "\(listener)", "reason": "\(sentence)"])
            environment.listeners.frontFailed(listener, reason: sentence)
        case .exchange, .redeem, .scrape, .login, .loginAnswer, .singleSignOn, .identify, .watch, .logout, .request, .files, .transferEnded:
            return .later
        }
        return .handled
    }

    func handle(_ request: FrontRequest, from front: FrontPeer) async {
        switch request {
        case .exchange(let call, let token, let viewer, let signedOn):
            let uid = if let viewer { await portal.viewer(cookie: viewer, signedOn: signedOn) } else { UInt32?.none }
            switch exchange(token: token, viewer: uid) {
            case .granted(let cookie, let grant):
                front.send(.exchanged(call: call, cookie: cookie, viewOnly: grant.viewOnly, forNamedViewers: false))
            case .forNamedViewers:
                front.send(.exchanged(call: call, cookie: nil, viewOnly: false, forNamedViewers: true))
            case .refused:
                front.send(.exchanged(call: call, cookie: nil, viewOnly: false, forNamedViewers: false))
            }
        case .redeem(let call, let cookie):
            guard let grant = await redeem(cookie: cookie, front: front) else {
                front.send(.redeemed(call: call, grant: nil, refusal: nil))
                break
            }
            switch await openDesktop(relay: grant.relay, front: front) {
            case .success(let fd):
                front.send(.redeemed(call: call, grant: grant, refusal: nil), descriptors: [fd])
                close(fd)
            case .failure(let refusal):
                front.send(.redeemed(call: call, grant: grant, refusal: refusal))
            }
        case .scrape(let call):
            front.send(.scraped(call: call, text: await service.metricsText()))
        case .login(let call, let user, let password, let address, let client):
            front.send(.loginStep(call: call, step: await portal.login(user: user, password: password, from: Self.peer(address: address, client: client))))
        case .loginAnswer(let call, let attempt, let answer, let address, let client):
            front.send(.loginStep(call: call, step: await portal.answer(attempt: attempt, text: answer, from: Self.peer(address: address, client: client))))
        case .singleSignOn(let call, let user, let proxy, let address, let client):
            front.send(.loginStep(call: call, step: await portal.singleSignOn(user: user, proxy: proxy, from: Self.peer(address: address, client: client))))
        case .identify(let call, let cookie, let touch):
            front.send(.identity(call: call, identity: await portal.identify(cookie: cookie, touch: touch)))
        case .watch(let call, let cookie, let after, let signedOn):
            let watched = await portal.watch(cookie: cookie, after: after, signedOn: signedOn)
            front.send(.watched(call: call, generation: watched.generation, loggedIn: watched.loggedIn, account: watched.account))
        case .logout(let call, let cookie):
            await portal.logout(cookie: cookie)
            front.send(.identity(call: call, identity: nil))
        case .request(let call, let cookie, let csrf, let body, let touch, let signedOn):
            let (status, text) = await portal.request(cookie: cookie, csrf: csrf, body: body, touch: touch, signedOn: signedOn)
            front.send(.answered(call: call, status: status, body: text))
        case .files(let call, let cookie, let csrf, let session, let fileCall, let signedOn):
            let (answer, transfer, descriptors) = await files.call(fileCall, session: session, cookie: cookie, csrf: csrf, signedOn: signedOn, front: front.id)
            let sent = front.send(.filed(call: call, transfer: transfer, answer: answer), descriptors: descriptors, cutOff: false)
            for fd in descriptors { close(fd) }
            if !sent {
                // The front's socket is full (a burst of large listings): this call is refused, in a record that fits.
                front.send(.filed(call: call, transfer: nil, answer: .refused(FileRefusal(.busy, "The gateway is busy; try again in a moment."))))
            }
            // A front gone while deskd-files answered took its transfers' end with it (endAll),
            // perhaps before this one was entered: it ends here, or its slot would stay taken.
            if !sent, let transfer {
                _ = await files.ended(transfer, bytes: 0, outcome: .failed("the web front went away"), front: front.id)
            }
        case .transferEnded(let call, let transfer, let bytes, let outcome):
            front.send(.filed(call: call, transfer: nil, answer: await files.ended(transfer, bytes: bytes, outcome: outcome, front: front.id)))
        case .relayEnded, .counts, .listenerFailed:
            break   // handleAtOnce's
        }
    }

    private func exchange(token: String, viewer: UInt32?) -> BrowserLinks.Exchange {
        let traded = environment.links.exchange(token: token, viewer: viewer)
        if case .granted(_, let grant) = traded, !makerMayStillOpen(grant) { return .refused }
        return traded
    }

    private func redeem(cookie: String, front: FrontPeer) async -> GatewayGrant? {
        guard let (grant, epoch) = environment.links.redeem(cookie: cookie), makerMayStillOpen(grant),
              let managed = await environment.registry.session(id: grant.sessionID),
              let login = await managed.gatewayLogin(viewOnly: grant.viewOnly) else { return nil }
        logger.info("browser connected through the gateway", metadata: [
            "session.display": "\(grant.display)", "session.user": "\(managed.user)", "link.issuedTo": "\(grant.issuedTo)",
            "link.viewOnly": "\(grant.viewOnly)",
        ])
        guard let relay = environment.browsers.grant(grant, epoch: epoch, login: login, front: front) else {
            return nil   // the front has gone meanwhile
        }
        // A server that keeps nothing from a viewer itself (wayvnc): the gateway reads its messages.
        return GatewayGrant(sessionID: grant.sessionID, viewOnly: grant.viewOnly, relay: relay, measuredDesktop: login.readsServerMessages)
    }

    /// Only for a relay this front was granted, once, while it is open: a revoke or the
    /// session's end since the cookie was spent removed it, and then there is nothing to open.
    /// (Called right after `redeem`, in the same request: the relay was granted a moment ago.)
    /// Looked at again once the login is done: a revoke during the login closes the socket here.
    private func openDesktop(relay number: UInt64, front: FrontPeer) async -> Result<Int32, DesktopRefusal> {
        let links = environment.links, browsers = environment.browsers
        guard let relay = browsers.open(number, of: front),
              !links.isRevoked(sessionID: relay.sessionID, viewOnly: relay.viewOnly, since: relay.epoch, share: relay.share) else {
            return .failure(DesktopRefusal("relay \(number) is not open: it was opened already, its link was taken back, or its session ended"))
        }
        guard loginsUnderWay.take() else {
            return .failure(DesktopRefusal("deskd is logging in to \(loginsUnderWay.limit) desktops for browsers already; try again"))
        }
        defer { loginsUnderWay.give() }
        let login = relay.login, timeout = handshakeTimeout
        // An RFB login to a server that may be stopped: up to the handshake timeout.
        let opened = await onDedicatedThread { Result { () throws(RFBClient.Failure) in try login.open(timeout: timeout) } }
        switch opened {
        case .success(let fd):
            guard browsers.isOpen(number, of: front), !links.isRevoked(sessionID: relay.sessionID, viewOnly: relay.viewOnly, since: relay.epoch, share: relay.share) else {
                close(fd)
                return .failure(DesktopRefusal("relay \(number) was closed while deskd logged in to its desktop"))
            }
            return .success(fd)
        case .failure(let failure):
            return .failure(DesktopRefusal(failure.description))
        }
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

