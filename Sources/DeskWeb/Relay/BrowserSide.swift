import DeskFrontProtocol
import DeskGatewayMetrics
import Glibc
import Logging
import NIOCore
import NIOPosix
import NIOWebSocket

/// The browser's end of a relay, on the WebSocket channel once the upgrade is done.
///
/// deskd handed over the session's Xvnc socket with the grant (at the upgrade), having logged in
/// to it after checking the socket's peer is the session's Xvnc. The relay hands that
/// authenticated socket to NIO on this same event loop, and only then greets the browser as an
/// RFB 3.8 server with security type None. From there, bytes flow both ways, each way read only
/// as fast as the other side drains (the pattern of NIO's GlueHandler).
///
/// Nothing the browser sends makes deskd hold more than a bounded amount for it: RFB waits for
/// Xvnc to drain, and a flood of pings gets one pong at a time (the latest, as RFC 6455 §5.5.3
/// allows), since NIO's write buffer water marks count payload bytes and a two-byte pong costs
/// hundreds in bookkeeping. A browser that takes nothing for `stallTimeout` is cut off; a relay
/// silent both ways, unanswered pings included, for `idleTimeout` is closed.
final class BrowserSide: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    enum Phase {
        case connectingToDesktop
        case handshaking
        case relaying
        case closing
    }

    let grant: GatewayGrant
    /// The desktop's socket as deskd handed it over (the relay's to close), or why there is none.
    private var handedOver: Result<Int32, DesktopRefusal>?
    let environment: GatewayEnvironment
    let logger: Logger
    var phase = Phase.connectingToDesktop
    var stream: BrowserStream
    /// The desktop's messages, read for a desktop whose server keeps nothing from a viewer
    /// itself (`GatewayGrant.measuredDesktop`); nil where they are relayed unread.
    var desktopMessages: ServerMessageFilter?
    var context: ChannelHandlerContext?
    var desktop: DesktopSide?
    var pendingRead = false
    var deadline: Scheduled<Void>?
    /// Counted in the open relays, so counted out exactly once.
    var countedAsRelay = false
    /// One connection is one refusal, whatever else goes wrong as it ends.
    var refusalCounted = false
    /// The last time anything came from either side (the browser's pongs included).
    var lastHeard = NIODeadline.now()
    /// Since when the browser's side has been over its high water mark.
    var unwritableSince: NIODeadline?
    /// Since when a ping or pong of the gateway's has waited to leave; one at a time.
    var controlFrameSince: NIODeadline?
    /// The latest ping's payload, answered once the pong before it has left.
    var pendingPong: ByteBuffer?
    /// Looks at the deadlines above, and pings a quiet browser, while relaying.
    var ticker: RepeatedTask?

    /// How much one side may hold for the other before the relay stops reading: enough for a
    /// full-screen update in flight, little enough that 256 relays stay within a few hundred MiB.
    static let waterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 128 << 10, high: 512 << 10)

    init(grant: GatewayGrant, desktop: Result<Int32, DesktopRefusal>, environment: GatewayEnvironment) {
        self.grant = grant
        self.handedOver = desktop
        self.environment = environment
        var logger = environment.logger
        logger[metadataKey: "session.id"] = "\(grant.sessionID)"
        self.logger = logger
        let clipboard = environment.configuration.clipboard
        stream = BrowserStream(filter: ClientMessageFilter(policy: .init(viewOnly: grant.viewOnly, clipboardFromBrowser: clipboard.fromBrowserAllowed,
                                                                         measuredDesktop: grant.measuredDesktop),
                                                           maxClipboardBytes: environment.limits.maxClipboardBytes))
        if grant.measuredDesktop {
            desktopMessages = ServerMessageFilter(policy: .init(clipboardToBrowser: clipboard.toBrowserAllowed && !grant.viewOnly))
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        try? context.channel.syncOptions?.setOption(.writeBufferWaterMark, value: Self.waterMark)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: TimeAmount(environment.limits.handshakeTimeout)) {
            let handler = loopBound.value
            guard handler.phase == .connectingToDesktop || handler.phase == .handshaking else { return }
            handler.countRefusal(.timeout)
            handler.logger.info("browser refused", metadata: ["reason": "the RFB handshake did not finish in time"])
            handler.closeAll()
        }
        // deskd looked at the link again before it handed over the desktop. A revoke since then
        // closed a relay not registered yet: the registry remembered the close, and it is
        // refused here; one after this registration finds it.
        guard environment.registry.add(context.channel, grant: grant) else {
            if case .success(let fd)? = takeHandedOver() { Glibc.close(fd) }
            countRefusal(.cookie)
            logger.info("browser refused", metadata: ["reason": "its link was taken back as it connected"])
            return closeAll()
        }
        connectToDesktop(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        ticker?.cancel()
        environment.registry.remove(context.channel)
        if countedAsRelay { environment.metrics.relayClosed() }
        phase = .closing
        self.context = nil
        desktop?.close()
        desktop = nil
        if case .success(let fd)? = takeHandedOver() { Glibc.close(fd) }
    }

    // MARK: The desktop's side

    private func connectToDesktop(_ context: ChannelHandlerContext) {
        switch takeHandedOver() {
        case .failure(let refusal)?: desktopRefused(refusal.reason)
        case .success(let fd)?: attachDesktop(fd: fd, eventLoop: context.eventLoop)
        case nil: desktopRefused("deskd handed over no desktop")
        }
    }

    /// The desktop deskd handed over, once; closed if the relay ends before it takes it.
    private func takeHandedOver() -> Result<Int32, DesktopRefusal>? {
        defer { handedOver = nil }
        return handedOver
    }

    private func attachDesktop(fd: Int32, eventLoop: any EventLoop) {
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        // The same event loop as the browser's channel, so the two sides call each other directly.
        // Only NIO's own event loops take a socket (an adopted in-memory channel's do not).
        guard let bootstrap = ClientBootstrap(validatingGroup: eventLoop) else {
            Glibc.close(fd)
            return desktopRefused("the browser's connection is on an event loop that cannot take the desktop's socket")
        }
        bootstrap
            .channelOption(.writeBufferWaterMark, value: Self.waterMark)
            // Xvnc writes whole framebuffer updates: read them in large pieces, fewer frames.
            .channelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 4096, initial: 64 << 10, maximum: 256 << 10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let desktop = DesktopSide(browser: loopBound.value)
                    loopBound.value.desktop = desktop
                    try channel.pipeline.syncOperations.addHandler(desktop)
                }
            }
            .withConnectedSocket(fd)
            .assumeIsolated()
            .whenComplete { result in
                let handler = loopBound.value
                switch result {
                case .success:
                    guard handler.phase == .connectingToDesktop, let context = handler.context else {
                        handler.desktop?.close()
                        return
                    }
                    handler.phase = .handshaking
                    handler.send(BrowserStream.serverVersion, context: context)
                case .failure(let error):
                    handler.desktopRefused("the gateway could not relay the desktop's connection: \(error)")
                }
            }
    }

    /// Xvnc could not be reached or refused the gateway: the browser hears why in RFB, which
    /// noVNC shows, and the connection ends.
    private func desktopRefused(_ why: String) {
        guard phase == .connectingToDesktop, let context else { return }
        countRefusal(.desktop)
        logger.warning("desktop refused the gateway", metadata: ["reason": "\(why)"])
        stream = BrowserStream(filter: stream.filter, refusal: "The desktop could not be reached; ask its owner for a new link.")
        phase = .handshaking
        send(BrowserStream.serverVersion, context: context)
    }

    // MARK: The browser's frames

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        switch frame.opcode {
        case .binary, .continuation:
            // RFC 6455 §5.1: a client masks every frame; a peer that does not is not a browser.
            guard frame.maskKey != nil else { return refuse(.frame, "the browser sent an unmasked frame") }
            lastHeard = .now()
            var bytes = frame.unmaskedData
            received(&bytes, context: context)
        case .ping:
            // Answered once the frames of this read are done: only the latest ping of a burst.
            lastHeard = .now()
            pendingPong = frame.unmaskedData
        case .pong:
            lastHeard = .now()
        case .connectionClose:
            // Echo the browser's close code, then end both sides.
            var data = frame.unmaskedData
            let code = data.readSlice(length: 2) ?? ByteBuffer()
            closeAll(sending: code)
        default:
            refuse(.frame, "the browser sent a \(frame.opcode) frame; RFB travels in binary frames")
        }
    }

    private func received(_ bytes: inout ByteBuffer, context: ChannelHandlerContext) {
        switch phase {
        case .connectingToDesktop:
            // In RFB the server speaks first: a client that does not wait is not noVNC.
            refuse(.rfb, "the browser spoke before the gateway greeted it")
        case .handshaking, .relaying:
            var reply: [UInt8] = []
            var forward = context.channel.allocator.buffer(capacity: bytes.readableBytes)
            do throws(BrowserStream.Violation) {
                try stream.consume(&bytes, reply: &reply, forward: &forward)
            } catch {
                if !reply.isEmpty { send(reply, context: context) }
                // A refusal was counted when the desktop turned the gateway down.
                if case .refused = error { return closeAll() }
                return refuse(.rfb, error.description)
            }
            if !reply.isEmpty { send(reply, context: context) }
            if phase == .handshaking && stream.isRelaying {
                phase = .relaying
                deadline?.cancel()
                countedAsRelay = true
                environment.metrics.relayOpened()
                startTicking(context)
                logger.info("browser relayed to desktop", metadata: ["session.view-only": "\(grant.viewOnly)"])
            }
            if forward.readableBytes > 0 { desktop?.write(forward) }
        case .closing:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        answerPing()
        desktop?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        phase = .closing
        desktop?.close()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // NIO's WebSocket error handler has already answered an oversized or malformed frame
        // with a close frame; this counts it and ends the desktop's side.
        if error is NIOWebSocketError {
            // NIO's handler may have closed the channel already, as it answered the frame.
            countRefusal(.frame)
            logger.info("browser refused", metadata: ["reason": "\(error)"])
            phase = .closing
            desktop?.close()
            desktop = nil
            closeAfterGrace(context.channel)
        } else {
            logger.debug("browser connection failed", metadata: ["error": "\(error)"])
            closeAll()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            unwritableSince = nil
            desktop?.browserDrained()
        } else if unwritableSince == nil {
            unwritableSince = .now()
        }
        context.fireChannelWritabilityChanged()
    }

    /// Reads from the browser only as fast as Xvnc takes what it sends.
    func read(context: ChannelHandlerContext) {
        if let desktop, !desktop.isWritable {
            pendingRead = true
        } else {
            context.read()
        }
    }

    // MARK: Called by the desktop's side

    var isWritable: Bool { context?.channel.isWritable ?? false }

    func desktopDrained() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }

    func fromDesktop(_ data: ByteBuffer) {
        lastHeard = .now()
        guard desktopMessages != nil else {
            context?.write(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: data)), promise: nil)
            return
        }
        guard let context, phase == .relaying || phase == .handshaking, var filter = desktopMessages else { return }
        desktopMessages = nil   // held here alone while it reads, so its buffers are not copied
        // The browser's SetPixelFormat is passed only before it asks for the screen, so every
        // update is measured in the format it was sent in.
        filter.requestedFormat = stream.filter.pixelFormat
        filter.offeredEncodings = stream.filter.passedEncodings
        let passed: ByteBuffer
        do throws(ServerMessageFilter.Violation) {
            switch try filter.read(data) {
            case .whole: passed = data
            case .rewritten(let bytes): passed = bytes
            }
        } catch {
            desktopMessages = filter
            logger.warning("desktop's messages refused", metadata: ["reason": "\(error)"])
            return closeAll()
        }
        desktopMessages = filter
        guard passed.readableBytes > 0 else { return }
        context.write(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: passed)), promise: nil)
    }

    func flushToBrowser() {
        context?.flush()
    }

    /// Xvnc hung up (the session ended, or `deskctl kill`): the browser gets a normal close.
    func desktopClosed() {
        desktop = nil
        guard phase != .closing else { return }
        logger.info("desktop closed the relay")
        closeAll()
    }

    // MARK: Ending

    private func send(_ bytes: [UInt8], context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.writeAndFlush(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: buffer)), promise: nil)
    }

    private func refuse(_ reason: GatewayMetrics.Refusal, _ why: String) {
        guard phase != .closing else { return }
        countRefusal(reason)
        logger.info("browser refused", metadata: ["reason": "\(why)"])
        var code = ByteBuffer()
        code.write(webSocketErrorCode: reason == .frame ? .protocolError : .policyViolation)
        closeAll(sending: code)
    }

    private func countRefusal(_ reason: GatewayMetrics.Refusal) {
        guard !refusalCounted else { return }
        refusalCounted = true
        environment.metrics.refused(reason)
    }

    /// Sends a close frame (1000 unless `code` says otherwise), then closes both sides.
    func closeAll(sending code: ByteBuffer? = nil) {
        guard let context, phase != .closing else { return }
        phase = .closing
        desktop?.close()
        desktop = nil
        var data = code ?? {
            var normal = ByteBuffer()
            normal.write(webSocketErrorCode: .normalClosure)
            return normal
        }()
        if data.readableBytes == 0 { data.write(webSocketErrorCode: .normalClosure) }
        let channel = context.channel
        // A browser that does not read would never take the close frame: then it goes at once.
        guard channel.isWritable else { return channel.close(promise: nil) }
        context.writeAndFlush(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)))
            .whenComplete { _ in channel.close(promise: nil) }
        closeAfterGrace(channel)
    }

    /// The close frame has a few seconds to leave; after that the connection is closed anyway,
    /// since a browser that stopped reading would otherwise hold it (and its slots) for ever.
    private func closeAfterGrace(_ channel: any Channel) {
        channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
    }
}
