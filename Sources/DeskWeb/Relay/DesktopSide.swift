import DeskFrontProtocol
import NIOCore

/// Xvnc's end of a relay, on the Unix socket the gateway authenticated.
final class DesktopSide: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var browser: BrowserSide?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    init(browser: BrowserSide) {
        self.browser = browser
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        browser = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        browser?.fromDesktop(Self.unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        browser?.flushToBrowser()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let browser = self.browser
        self.browser = nil
        browser?.desktopClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { browser?.desktopDrained() }
        context.fireChannelWritabilityChanged()
    }

    /// Reads from Xvnc only as fast as the browser takes what it sends.
    func read(context: ChannelHandlerContext) {
        if browser?.isWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }

    // MARK: Called by the browser's side

    var isWritable: Bool { context?.channel.isWritable ?? false }

    func browserDrained() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }

    func write(_ data: ByteBuffer) {
        context?.write(Self.wrapOutboundOut(data), promise: nil)
    }

    func flush() {
        context?.flush()
    }

    func close() {
        browser = nil
        context?.close(promise: nil)
    }
}
