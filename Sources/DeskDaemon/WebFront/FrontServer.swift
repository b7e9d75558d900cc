import DeskCore
import DeskFrontProtocol
import DeskLinux
import Glibc
import Logging
import ServiceLifecycle
import Synchronization

/// deskd's front socket: where deskd-web, the web front, connects (SOCK_SEQPACKET, mode 0600,
/// owned by `[web] user`, whose uid SO_PEERCRED must also show). Each connection is told the
/// gateway's settings and handed the listening sockets deskd bound; its requests are answered
/// by `FrontRequests`. A connection that sends what is not a request, or asks faster than deskd
/// answers, is cut off; deskd serves on.
final class FrontServer: Service, Sendable {
    /// A listening socket for the fronts: "gateway" (with TLS material) or "metrics".
    struct Offer: Sendable {
        let name: String
        let fd: Int32
        let tls: TLSMaterial?
    }

    let socketPath: String
    let webUser: String
    let gateway: GatewayConfiguration?
    /// The portal's page files, read once at deskd's start (`TemplateLibrary.portalPage`).
    let portalPage: PortalPage?
    private let requests: FrontRequests
    private let logger: Logger

    private struct State {
        var peers: [ObjectIdentifier: FrontPeer] = [:]
        var offers: [String: Offer] = [:]
        var listener: Int32 = -1
    }

    private let state = Mutex(State())
    /// Fronts connected at once: one runs; a restart overlaps its predecessor for a moment.
    static let maxPeers = 4

    init(service: SessionService, logger: Logger) {
        let configuration = service.configuration
        socketPath = configuration.runtimeDirectory + "/web.sock"
        webUser = configuration.web.user
        gateway = configuration.web.gatewayConfiguration
        portalPage = TemplateLibrary(directories: configuration.templateDirectories).portalFiles()
            .map { PortalPage(html: $0.html, style: $0.style, script: $0.script, drop: $0.drop) }
        if gateway != nil, portalPage == nil {
            logger.error("the portal's page is not installed: its address answers 503 until it is; reinstall deskd",
                         metadata: ["templates": "\(configuration.templateDirectories.joined(separator: ":"))", "looked-for": "portal/portal.html, portal.css, portal.js"])
        }
        // deskd logs in to the desktop while the browser's upgrade request waits, within the
        // gateway's own deadline for it (the handshake timeout from the connection's accept):
        // half of it, so a desktop that does not answer is refused in RFB, with its reason,
        // before the gateway gives up on the connection.
        let portal = WebPortal(service: service, harness: ControlHarness(service: service, logger: logger), logger: logger)
        requests = FrontRequests(service: service, handshakeTimeout: (gateway?.limits.handshakeTimeout ?? .seconds(10)) / 2,
                                 portal: portal, files: WebFiles(service: service, portal: portal))
        self.logger = logger
    }

    /// The front's account, or a sentence saying it is missing.
    func account() -> Result<UserAccount, DeskError> {
        guard let account = UserAccount.named(webUser) else {
            return .failure(DeskError(.internalError, "the web front's account \(webUser) does not exist, so nothing serves the gateway or the metrics; create it (useradd --system --user-group --no-create-home --home-dir /nonexistent \(webUser)) or name another in web.user, and restart deskd."))
        }
        guard account.uid != 0 else {
            return .failure(DeskError(.internalError, "web.user \(webUser) is root; the web front must run as an unprivileged account."))
        }
        return .success(account)
    }

    func run() async throws {
        let account: UserAccount
        switch self.account() {
        case .failure(let error):
            logger.error("no web front", metadata: ["reason": "\(error.message)"])
            requests.service.environment.listeners.frontFailed("gateway", reason: error.message)
            try? await gracefulShutdown()
            return
        case .success(let found): account = found
        }
        let listener: Int32
        do { listener = try RecordSocket.listen(at: socketPath, owner: account.uid, group: account.gid) } catch {
            logger.error("no web front: its socket cannot be made", metadata: ["front.socket": "\(socketPath)", "error": "\(error)"])
            try? await gracefulShutdown()
            return
        }
        state.withLock { $0.listener = listener }
        let started = DetachedThread.start(name: "deskd-front") { [self] in acceptLoop(listener, account: account) }
        if !started {
            logger.error("no web front: no thread to accept it on")
            close(listener)
            unlink(socketPath)
            try? await gracefulShutdown()
            return
        }
        try? await gracefulShutdown()
        // Ends the accept loop; then every front's connection.
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        let peers = state.withLock { Array($0.peers.values) }
        for peer in peers { peer.socket.shutdown() }
        unlink(socketPath)
    }

    private func acceptLoop(_ listener: Int32, account: UserAccount) {
        defer { close(listener) }
        while true {
            let accepted: RecordSocket?
            do { accepted = try RecordSocket.accept(on: listener) } catch {
                // Out of descriptors or memory for a moment: the socket stays, and so does this loop.
                logger.warning("front socket: accept failed; trying again", metadata: ["error": "\(error)"])
                usleep(100_000)
                continue
            }
            guard let connection = accepted else { return }   // shut down: deskd is stopping
            guard let credentials = connection.peer, credentials.uid == account.uid else {
                // The socket's mode already keeps others out: only root could get here.
                logger.warning("front socket: a connection from another account was refused", metadata: ["peer.uid": "\(connection.peer?.uid ?? 0)"])
                continue
            }
            admit(connection, credentials: credentials)
        }
    }

    /// Serves a front's connection (the accept loop's, once its peer is `web.user`; a test's
    /// socket pair, whose other end is a `DeskdLink`): the setup, every listener offered, then
    /// its requests on a thread of their own. False when it was refused.
    @discardableResult
    func admit(_ connection: RecordSocket, credentials: PeerCredentials) -> Bool {
        // deskd's records to the front (the metrics text, the TLS chain) may pass the default buffer.
        connection.allowRecords(upTo: 2 * FrontWire.eventLimit)
        let peer = FrontPeer(socket: connection, credentials: credentials)
        let admitted = state.withLock { state -> Bool in
            guard state.peers.count < Self.maxPeers else { return false }
            state.peers[peer.id] = peer
            // Under the lock, so an offer made meanwhile reaches it once, and after the setup.
            peer.send(.setup(gateway: gateway, portal: portalPage))
            for offer in state.offers.values.sorted(by: { $0.name < $1.name }) {
                peer.send(.listen(listener: offer.name, tls: offer.tls), descriptors: [offer.fd])
            }
            return true
        }
        guard admitted else {
            logger.warning("front socket: a connection was refused, \(Self.maxPeers) web fronts are connected", metadata: ["peer.pid": "\(credentials.pid)"])
            connection.shutdown()
            return false
        }
        logger.info("web front connected", metadata: ["peer.pid": "\(credentials.pid)", "peer.uid": "\(credentials.uid)"])
        if !DetachedThread.start(name: "deskd-front-in", { [self] in readLoop(peer) }) {
            drop(peer)
            return false
        }
        return true
    }

    /// One front's requests, in order: the quick ones here, the ones deskd may take a while over
    /// (a login to a desktop, the metrics) in tasks of their own.
    private func readLoop(_ peer: FrontPeer) {
        defer { drop(peer) }
        var buffer: [UInt8] = []
        while true {
            let received: (bytes: [UInt8], descriptors: [Int32])?
            do { received = try peer.socket.receive(limit: FrontWire.requestLimit, using: &buffer) } catch {
                logger.warning("web front cut off: it sent a message over the limit", metadata: ["peer.pid": "\(peer.credentials.pid)", "error": "\(error)"])
                return
            }
            guard let received else { return }
            // A front passes deskd nothing.
            for fd in received.descriptors { close(fd) }
            guard let request = FrontWire.decode(FrontRequest.self, from: received.bytes) else {
                logger.warning("web front cut off: it sent something that is not a request", metadata: ["peer.pid": "\(peer.credentials.pid)"])
                return
            }
            switch requests.handleAtOnce(request, from: peer, isOffered: { name in state.withLock { $0.offers[name] != nil } }) {
            case .handled: continue
            case .cutOff(let why):
                logger.warning("web front cut off: \(why)", metadata: ["peer.pid": "\(peer.credentials.pid)"])
                return
            case .later: break
            }
            // A page's watch waits half a minute by design: it has a ceiling of its own, and one over
            // it is told "nothing yet"; any other request over the ceiling cuts the front off.
            let watch: UInt64? = if case .watch(let call, _, _, _) = request { call } else { nil }
            let limit = watch == nil ? peer.inFlight : peer.watches
            guard limit.take() else {
                if let watch {
                    peer.send(.watched(call: watch, generation: nil, loggedIn: true, account: nil))
                    continue
                }
                logger.warning("web front cut off: it asked faster than deskd answers", metadata: ["peer.pid": "\(peer.credentials.pid)"])
                return
            }
            let requests = requests
            // This loop is a blocking reader's thread, outside Swift concurrency: a slow request
            // becomes a task of its own, at most `limit` of them per front at once.
            Task {
                await requests.handle(request, from: peer)
                limit.give()
            }
        }
    }

    private func drop(_ peer: FrontPeer) {
        peer.socket.shutdown()
        let known = state.withLock { $0.peers.removeValue(forKey: peer.id) != nil }
        guard known else { return }
        let environment = requests.service.environment
        // Its relays ended with it; what it counted as open is open no more.
        environment.browsers.endAll(of: peer)
        requests.files.endAll(of: peer.id)
        let last = peer.counts.withLock { $0 }
        environment.gatewayMetrics.absorb(from: last, to: last.closed)
        logger.notice("web front disconnected", metadata: ["peer.pid": "\(peer.credentials.pid)"])
    }

    /// A listener is bound: every front serves it, and so does each that connects later.
    func offer(_ offer: Offer) {
        state.withLock { state in
            state.offers[offer.name] = offer
            for peer in state.peers.values { peer.send(.listen(listener: offer.name, tls: offer.tls), descriptors: [offer.fd]) }
        }
    }

    func withdraw(_ name: String) {
        _ = state.withLock { $0.offers.removeValue(forKey: name) }
    }
}
