import DeskFrontProtocol
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `GET /metrics` in Prometheus's text format, on a listener of its own (`[metrics] listen`,
/// bound by deskd and passed to deskd-web), so a scraper never shares the gateway's port or the
/// control socket. Plain HTTP: it holds
/// counts and no names, and belongs on loopback or a management network.
///
/// Small on purpose: one request per connection, a deadline for it, a cap on connections.
public final class MetricsEndpoint: Sendable {
    private let scrape: @Sendable () async -> String
    private let logger: Logger
    private let group: any EventLoopGroup
    private let boundPort = Mutex<Int?>(nil)
    private let open = Atomic<Int>(0)

    /// At once; more are closed unanswered. A scraper needs one.
    static let maxConnections = 16
    static let requestTimeout: TimeAmount = .seconds(10)

    public init(logger: Logger, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                scrape: @escaping @Sendable () async -> String) {
        self.scrape = scrape
        self.logger = logger
        self.group = eventLoopGroup
    }

    /// The port it listens on once it does.
    public var port: Int? { boundPort.withLock { $0 } }

    /// Serves on a socket deskd bound and passed over (deskd-web), until a graceful shutdown or
    /// the task's cancellation.
    public func serve(listeningSocket fd: Int32) async throws(GatewayError) {
        let server: any Channel
        do {
            server = try await ServerBootstrap(group: group)
                .childChannelInitializer { [self] channel in
                    channel.eventLoop.makeCompletedFuture { try self.initialize(channel) }
                }
                .withBoundSocket(fd)
                .get()
        } catch {
            throw GatewayError(.bindFailed, "the metrics endpoint could not serve on the socket deskd passed: \(error)")
        }
        boundPort.withLock { $0 = server.localAddress?.port }
        await server.serveUntilShutdown()
    }

    private func initialize(_ channel: any Channel) throws {
        guard open.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
            open.subtract(1, ordering: .relaxed)
            channel.close(promise: nil)
            return
        }
        let deadline = channel.eventLoop.scheduleTask(in: Self.requestTimeout) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { [self] _ in
            deadline.cancel()
            open.subtract(1, ordering: .relaxed)
        }
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = 8 << 10
        limits.maxHeaderFieldCount = 32
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true, withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
        try channel.pipeline.syncOperations.addHandler(MetricsHandler(scrape: scrape))
    }
}



/// Answers one request and closes: the text for `GET /metrics`, 404 or 405 for anything else.
private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let scrape: @Sendable () async -> String
    private var head: HTTPRequestHead?

    init(scrape: @escaping @Sendable () async -> String) {
        self.scrape = scrape
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let channel = context.channel
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        guard path == "/metrics" else {
            return send(.notFound, "Not found: deskd serves /metrics here.\n", head: head, to: loopBound, channel: channel)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return send(.methodNotAllowed, "/metrics answers GET.\n", head: head, to: loopBound, channel: channel)
        }
        let scrape = self.scrape
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let text = context.eventLoop.makePromise(of: String.self)
        text.completeWithTask { await scrape() }
        text.futureResult.whenSuccess { text in handler.value.send(.ok, text, head: head, to: loopBound, channel: channel) }
    }

    private func send(_ status: HTTPResponseStatus, _ text: String, head: HTTPRequestHead,
                      to loopBound: NIOLoopBound<ChannelHandlerContext>, channel: any Channel) {
        // The deadline may have closed the connection while the text was being made.
        guard channel.isActive else { return }
        let context = loopBound.value
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: status == .ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(text.utf8.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(channel.allocator.buffer(string: text)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
