import DeskFrontProtocol
import DeskGatewayMetrics
import Logging
import NIOCore
import Synchronization

/// What every connection of one gateway shares.
struct GatewayEnvironment: Sendable {
    let configuration: GatewayConfiguration
    let authority: any GatewayAuthority
    /// The web portal's deskd, where the gateway serves one (deskd-web); nil: no portal.
    let portal: (any PortalAuthority)?
    let logger: Logger
    let metrics: GatewayMetrics
    let files: StaticFiles
    /// The portal's page, as deskd handed it over; nil: not installed.
    let portalPage: PortalPage?
    let registry: RelayRegistry
    /// Read noVNC's files on the connection's own event loop: for an adopted, in-memory
    /// connection (`Gateway.adopt`), which stalls no one else and whose caller then finds each
    /// answer sent as soon as its request is read. Every socket's connection reads them off its
    /// event loop, so a slow disk stalls no relay.
    var readsFilesInline = false
    /// deskd's answers still to come back, on every connection of this gateway.
    let questions: QuestionsInFlight
    /// The portal's live-update streams open now.
    let streams: EventStreams

    /// The portal's uploads whose bytes have not come yet.
    let uploads = PendingUploads()

    /// deskd's answers to file calls, where the portal's deskd gives them.
    var fileAuthority: (any FileAuthority)? { portal as? any FileAuthority }

    var limits: GatewayConfiguration.Limits { configuration.limits }
    var isTLS: Bool { configuration.isTLS }

    /// Asks deskd (its authority or its portal) from `eventLoop`, where the answer comes back;
    /// counted while it is out, so an adopted connection's caller knows when all are in.
    func ask<T: Sendable>(on eventLoop: any EventLoop, _ question: @escaping @Sendable () async -> T) -> EventLoopFuture<T> {
        let questions = questions
        questions.asked()
        let promise = eventLoop.makePromise(of: T.self)
        promise.completeWithTask(question)
        // First among the future's callbacks: the one that acts on the answer runs right after,
        // in the same turn of the event loop.
        return promise.futureResult.always { _ in questions.answered() }
    }
}

/// How many of deskd's answers a gateway waits for (`GatewayEnvironment.ask`, and a portal
/// page's stream of live updates while it runs).
final class QuestionsInFlight: Sendable {
    private let count = Atomic<Int>(0)

    func asked() { count.add(1, ordering: .relaxed) }
    func answered() { count.subtract(1, ordering: .releasing) }
    var now: Int { count.load(ordering: .acquiring) }
}
