import DeskFrontProtocol
import DeskGatewayMetrics
import Glibc
import Logging
import NIOCore
import NIOPosix
import NIOWebSocket

/// A relay's liveness: pings to a browser not heard from, pongs owed, and the two deadlines
/// (a browser that stopped reading, a relay silent both ways), checked on each tick.
extension BrowserSide {
    /// Sends the pong owed for the latest ping, unless the gateway's last ping or pong has not
    /// left yet: then it waits for that one, and later pings replace it.
    func answerPing() {
        guard controlFrameSince == nil, let payload = pendingPong else { return }
        pendingPong = nil
        sendControlFrame(.pong, payload)
    }

    /// A ping or pong, one at a time: the next pong waits in `pendingPong` until this one has left.
    /// Each costs a write to the socket, so a burst of pings costs one, not one each.
    func sendControlFrame(_ opcode: WebSocketOpcode, _ payload: ByteBuffer) {
        guard let context, phase != .closing else { return }
        controlFrameSince = .now()
        let promise = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        promise.futureResult.assumeIsolated().whenSuccess {
            let handler = loopBound.value
            handler.controlFrameSince = nil
            handler.answerPing()
        }
        context.writeAndFlush(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: opcode, data: payload)), promise: promise)
    }

    func startTicking(_ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let tick = TimeAmount(environment.limits.relayTick)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { _ in loopBound.value.tick() }
    }

    /// Cuts off a browser that stopped reading, closes a relay gone silent, and otherwise pings
    /// a browser not heard from for a tick, so one that is there has something to answer.
    func tick() {
        guard phase == .relaying, let context else { return }
        let now = NIODeadline.now(), limits = environment.limits
        if let since = [unwritableSince, controlFrameSince].compactMap({ $0 }).min(), now - since >= TimeAmount(limits.stallTimeout) {
            cut(.notReading, "the browser took nothing the gateway sent for \(limits.stallTimeout)")
        } else if now - lastHeard >= TimeAmount(limits.idleTimeout) {
            cut(.idle, "nothing came from the browser or the desktop for \(limits.idleTimeout), not even an answer to a ping")
        } else if now - lastHeard >= TimeAmount(limits.relayTick), controlFrameSince == nil, context.channel.isWritable {
            sendControlFrame(.ping, context.channel.allocator.buffer(string: "deskd"))
        }
    }

    /// Ends a relay that was under way: counted, logged, and closed at once (a browser that does
    /// not read would never take a close frame).
    func cut(_ reason: GatewayMetrics.Cut, _ why: String) {
        guard let context, phase != .closing else { return }
        environment.metrics.cut(reason)
        logger.info("browser cut off", metadata: ["reason": "\(why)"])
        phase = .closing
        desktop?.close()
        desktop = nil
        context.close(promise: nil)
    }
}
