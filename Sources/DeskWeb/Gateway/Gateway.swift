import CoreMetrics
import DeskFrontProtocol
import DeskGatewayMetrics
import DeskLinux
import Glibc
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

/// deskd's web gateway: one listener that serves noVNC, trades one-time link tokens for
/// cookies, and relays each browser's WebSocket to its session's Xvnc, having authenticated
/// to Xvnc itself so the VNC password never reaches a browser.
///
/// It serves the listening socket deskd bound and passed over (`serve(listeningSocket:tls:)`)
/// until its task is cancelled or a graceful shutdown begins, then closes every connection,
/// relays included.
public final class Gateway: Sendable {
    public let configuration: GatewayConfiguration
    public let metrics: GatewayMetrics
    private let authority: any GatewayAuthority
    private let portal: (any PortalAuthority)?
    private let logger: Logger
    private let group: any EventLoopGroup
    private let registry = RelayRegistry()
    private let connections = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let addresses: SharedAddressQuota
    private let listening = Mutex<Listening>(.notYet([]))
    /// What every connection shares.
    private let environment: GatewayEnvironment
    private let questions = QuestionsInFlight()

    private enum Listening {
        case notYet([CheckedContinuation<Int, any Error>])
        case on(Int)
        case ended(GatewayError)
    }

    /// `metricsFactory` receives the gateway's counters (deskd's Prometheus registry); by default
    /// they are kept in `metrics` only.
    /// `onMetricsChange` is called after each change of `metrics` (deskd-web tells deskd).
    /// `portalPage`: the portal's page (deskd's copy of its files), served at `/` where `portal` is set.
    /// `viewerBundle`: noVNC's modules as one file (deskd-web's, where esbuild is installed); nil:
    /// the modules one by one.
    public init(configuration: GatewayConfiguration, authority: any GatewayAuthority, portal: (any PortalAuthority)? = nil,
                portalPage: PortalPage? = nil, viewerBundle: ViewerBundle? = nil, logger: Logger,
                metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance, onMetricsChange: (@Sendable () -> Void)? = nil,
                eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.portal = portal
        self.metrics = GatewayMetrics(factory: metricsFactory, onChange: onMetricsChange)
        self.authority = authority
        self.logger = logger
        self.group = eventLoopGroup
        self.addresses = SharedAddressQuota(limit: configuration.limits.maxConnectionsPerAddress)
        self.environment = GatewayEnvironment(configuration: configuration, authority: authority, portal: portal, logger: logger, metrics: metrics,
                                              files: StaticFiles(directory: configuration.novncDirectory, bundle: viewerBundle), portalPage: portalPage,
                                              registry: registry, questions: questions,
                                              streams: EventStreams(limits: .init(total: max(1, configuration.limits.maxConnections / 2))))
    }

    /// The port the gateway listens on, once it does (the kernel's pick when configured with 0).
    public func port() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let now: Result<Int, GatewayError>? = listening.withLock { state in
                switch state {
                case .notYet(var waiting):
                    waiting.append(continuation)
                    state = .notYet(waiting)
                    return nil
                case .on(let port): return .success(port)
                case .ended(let error): return .failure(error)
                }
            }
            if let now { continuation.resume(with: now.mapError { $0 as any Error }) }
        }
    }

    private func settle(_ outcome: Result<Int, GatewayError>) {
        let waiting: [CheckedContinuation<Int, any Error>] = listening.withLock { state in
            guard case .notYet(let waiting) = state else { return [] }
            switch outcome {
            case .success(let port): state = .on(port)
            case .failure(let error): state = .ended(error)
            }
            return waiting
        }
        for continuation in waiting { continuation.resume(with: outcome.mapError { $0 as any Error }) }
    }

    /// Browsers relayed to `sessionID` now.
    public func relays(sessionID: String) -> Int {
        registry.channels(of: sessionID).count
    }

    /// Closes the relays deskd names (a revoke, a session's end); one not registered yet is closed as it is.
    public func disconnect(relays: [UInt64]) {
        for channel in registry.take(relays: relays) { channel.close(promise: nil) }
    }

    /// Closes every browser relayed to `sessionID`, or with `viewOnlyOnly` every view-only one
    /// (when deskd kills the session, or takes its links back); returns how many there were.
    @discardableResult
    public func disconnect(sessionID: String, viewOnlyOnly: Bool = false) -> Int {
        let channels = registry.channels(of: sessionID, viewOnlyOnly: viewOnlyOnly)
        for channel in channels { channel.close(promise: nil) }
        return channels.count
    }

    /// Serves on a socket deskd bound and passed over (deskd-web, the web front), with the TLS
    /// certificate and key deskd read for it; returns when a graceful shutdown or the task's
    /// cancellation ends it, having closed every connection. Throws if it cannot start.
    /// The socket is the gateway's from here: closed when it ends, or fails to start.
    public func serve(listeningSocket fd: Int32, tls: TLSMaterial?) async throws(GatewayError) {
        let server: any Channel
        do throws(GatewayError) {
            let context: NIOSSLContext?
            do throws(GatewayError) { context = try tls.map(makeTLSContext(from:)) } catch {
                Glibc.close(fd)   // NIO never saw it
                throw error
            }
            server = try await start(on: fd, tls: context)
        } catch {
            settle(.failure(error))
            throw error
        }
        await serve(server)
    }

    private func start(on fd: Int32, tls: NIOSSLContext?) async throws(GatewayError) -> any Channel {
        let server = try await bind(fd, tls: tls)
        let port = server.localAddress?.port ?? configuration.port
        logger.info("gateway listening", metadata: ["gateway.host": "\(configuration.host)", "gateway.port": "\(port)",
                                                    "gateway.tls": "\(configuration.isTLS)"])
        settle(.success(port))
        if access(configuration.novncDirectory + "/vnc.html", R_OK) != 0 {
            logger.warning("noVNC is not where the gateway looks: links will open no viewer", metadata: [
                "gateway.novnc-dir": "\(configuration.novncDirectory)", "hint": "install Debian's novnc package, or set novnc_dir",
            ])
        }
        return server
    }

    public func serve(_ server: any Channel) async {
        await server.serveUntilShutdown()
        let open = connections.withLock { Array($0.values) }
        for channel in open { channel.close(promise: nil) }
        for channel in open { try? await channel.closeFuture.get() }
        logger.info("gateway stopped")
    }

    private func makeTLSContext(from material: TLSMaterial) throws(GatewayError) -> NIOSSLContext {
        do {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(material.certificatePEM.utf8)).map { NIOSSLCertificateSource.certificate($0) }
            guard !chain.isEmpty else { throw GatewayError(.tlsUnreadable, "\(material.certificatePath) holds no PEM certificate") }
            let key = try NIOSSLPrivateKey(bytes: Array(material.keyPEM.utf8), format: .pem)
            return try NIOSSLContext(configuration: configuration.serverTLS(certificateChain: chain, privateKey: key))
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError(.tlsUnreadable, "the gateway could not load its TLS certificate \(material.certificatePath) and key \(material.keyPath): \(error)")
        }
    }

    private func bind(_ fd: Int32, tls: NIOSSLContext?) async throws(GatewayError) -> any Channel {
        do {
            let bootstrap = ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 1024)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { [self] channel in
                    channel.eventLoop.makeCompletedFuture {
                        try self.initialize(channel, tls: tls)
                    }
                }
            return try await bootstrap.withBoundSocket(fd).get()
        } catch {
            throw .bindFailed("the gateway", host: configuration.host, port: configuration.port, error)
        }
    }

    // MARK: One connection

    /// Serves one plain-HTTP connection that did not come through the gateway's listener: a
    /// channel its caller made, such as the fuzzer's in-memory one (Sources/DeskFuzzTargets),
    /// which then sees the pipeline a browser's connection gets (noVNC's files are read on its
    /// own event loop). Call it on the channel's event loop; a desktop is reached through NIO's
    /// sockets, so a channel on another kind of event loop gets its desktop refused. An
    /// in-memory channel has no socket for the kernel to name the maker of: `owner` says who
    /// made it, as the kernel would for a connection from this host.
    package func adopt(_ channel: any Channel, owner: UInt32? = nil) throws {
        var environment = environment
        environment.readsFilesInline = true
        try initialize(channel, environment: environment, tls: nil, knownOwner: owner)
    }

    /// deskd's answers the gateway still waits for: when an adopted connection has nothing left
    /// to do but what its caller sends (with the event loop's own work run).
    package var questionsInFlight: Int { questions.now }

    private func initialize(_ channel: any Channel, environment: GatewayEnvironment? = nil, tls: NIOSSLContext?, knownOwner: UInt32? = nil) throws {
        let environment = environment ?? self.environment
        // Refused before a byte is parsed: a flood of connections costs an accept and a close each.
        // Only a trusted proxy's connections wait for their first request to be counted.
        let peer = channel.remoteAddress, local = channel.localAddress
        let owner = { () -> UInt32? in
            if let knownOwner { return knownOwner }
            guard let address = peer?.ipAddress, let port = peer?.port, let localAddress = local?.ipAddress, let localPort = local?.port else { return nil }
            return ConnectionOwner.of(peer: address, peerPort: port, local: localAddress, localPort: localPort)
        }
        let address: ConnectionAddress
        switch ConnectionAddress.accept(peer: peer?.ipAddress, local: local?.ipAddress, quota: addresses,
                                        trustedProxies: configuration.trustedProxies, isThisHost: ConnectionOwner.isThisHost, owner: owner) {
        case .admitted(let admitted):
            address = admitted
        case .overCapacity:
            logger.debug("connection refused", metadata: ["reason": "address-capacity"])
            metrics.refused(.addressCapacity)
            try channel.pipeline.syncOperations.addHandler(CapacityRefusal(plainHTTP: tls == nil))
            return
        case .unknownOwner:
            logger.debug("connection refused", metadata: ["reason": "unknown-owner"])
            metrics.refused(.unknownOwner)
            try channel.pipeline.syncOperations.addHandler(CapacityRefusal(plainHTTP: tls == nil, response: CapacityRefusal.unknownOwner))
            return
        }
        guard metrics.admitConnection(limit: configuration.limits.maxConnections) else {
            address.release()
            logger.debug("connection refused", metadata: ["reason": "capacity"])
            try channel.pipeline.syncOperations.addHandler(CapacityRefusal(plainHTTP: tls == nil))
            return
        }
        let key = ObjectIdentifier(channel)
        connections.withLock { $0[key] = channel }
        let metrics = metrics, notes = UpgradeNotes(), registry = registry
        channel.closeFuture.whenComplete { [self] _ in
            connections.withLock { _ = $0.removeValue(forKey: key) }
            notes.dropDesktop()
            address.release()
            metrics.connectionClosed()
            // However far it got: a granted relay is over for deskd once its connection is.
            if case .granted(let grant) = notes.recorded {
                registry.forget(grant.relay)
                authority.relayEnded(grant)
            }
        }

        let pipeline = channel.pipeline.syncOperations
        if let tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls)) }

        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: configuration.limits.maxFrameBytes,
            automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                // Over its address's cap behind a proxy: the HTTP handler answers 503.
                guard address.admit(head.headers) else {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                return Self.shouldUpgrade(channel, head, environment: environment, notes: notes, proxy: address.proxy)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    guard case .granted(let grant) = notes.recorded, let desktop = notes.takeDesktop() else {
                        throw NIOWebSocketUpgradeError.unsupportedWebSocketTarget
                    }
                    do {
                        try channel.pipeline.syncOperations.addHandler(BrowserSide(grant: grant, desktop: desktop, environment: environment))
                    } catch {
                        // The relay never took the desktop's socket: it is closed here.
                        if case .success(let fd) = desktop { Glibc.close(fd) }
                        throw error
                    }
                }
            }
        )
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = configuration.limits.maxHeaderBytes
        limits.maxHeaderFieldSize = configuration.limits.maxHeaderBytes
        limits.maxHeaderFieldCount = 64
        try pipeline.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                // From here the connection is a WebSocket: the HTTP handler and its deadline go.
                if let http = try? context.pipeline.syncOperations.handler(type: GatewayHTTPHandler.self) {
                    context.pipeline.syncOperations.removeHandler(http, promise: nil)
                }
            }),
            withEncoderConfiguration: .init(),
            withDecoderLimitConfiguration: limits
        )
        try pipeline.addHandler(GatewayHTTPHandler(environment: environment, notes: notes, address: address))
    }

    /// Decides a WebSocket upgrade: the right path, the gateway's own origin, and a cookie deskd
    /// redeems (once). A refusal is noted for the HTTP handler, which answers 403 with it.
    private static func shouldUpgrade(_ channel: any Channel, _ head: HTTPRequestHead, environment: GatewayEnvironment,
                                      notes: UpgradeNotes, proxy: String?) -> EventLoopFuture<HTTPHeaders?> {
        guard RequestChecks.path(of: head.uri) == "/websockify" else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        guard RequestChecks.isSameOrigin(head.headers, tls: environment.isTLS, publicOrigin: environment.configuration.publicOrigin) else {
            notes.record(.refused(.origin, "This WebSocket was opened from a page that is not the gateway's own."))
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        guard !RequestChecks.forgesSingleSignOn(head.headers, configuration: environment.configuration, proxy: proxy) else {
            notes.record(.refused(.forgedUser, RequestChecks.forgedUserSentence(environment.configuration)))
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        guard let cookie = RequestChecks.cookie(RequestChecks.cookieName, in: head.headers) else {
            notes.record(.refused(.cookie, OpenPage.refusedSentence))
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let authority = environment.authority
        let offered = head.headers[canonicalForm: "Sec-WebSocket-Protocol"].map { $0.lowercased() }
        return environment.ask(on: channel.eventLoop) { () async -> HTTPHeaders? in
            guard let redemption = await authority.redeem(cookie: cookie) else {
                notes.record(.refused(.cookie, OpenPage.refusedSentence))
                return nil
            }
            let grant = redemption.grant
            notes.hold(redemption)
            // Closed while deskd answered: its close saw no grant, so end the relay here (twice is harmless).
            if !channel.isActive {
                notes.dropDesktop()
                environment.registry.forget(grant.relay)
                authority.relayEnded(grant)
            }
            var headers = HTTPHeaders()
            // noVNC asks for no subprotocol; websockify's clients ask for "binary", which is what this is.
            if offered.contains("binary") { headers.add(name: "Sec-WebSocket-Protocol", value: "binary") }
            // The cookie is spent: the browser may as well forget it now.
            headers.add(name: "Set-Cookie", value: "\(RequestChecks.cookieName)=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0")
            return headers
        }
    }
}

/// Answers a connection over the limit and closes it: a 503 in plain HTTP (a proxy in front
/// then says why), nothing at all under TLS (a handshake would cost more than the refusal).
private final class CapacityRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let overCapacity = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 5\r\n\r\n"
    static let unknownOwner: String = {
        let sentence = "deskd could not tell which account on this host made this connection (a socket bound to a device, or one closed before it was answered); connect again from an ordinary socket.\n"
        return "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(sentence.utf8.count)\r\nConnection: close\r\n\r\n" + sentence
    }()
    private let plainHTTP: Bool
    private let response: String

    init(plainHTTP: Bool, response: String = CapacityRefusal.overCapacity) {
        self.plainHTTP = plainHTTP
        self.response = response
    }

    func channelActive(context: ChannelHandlerContext) {
        guard plainHTTP else { return context.close(promise: nil) }
        let channel = context.channel
        context.writeAndFlush(Self.wrapOutboundOut(channel.allocator.buffer(string: response)))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
