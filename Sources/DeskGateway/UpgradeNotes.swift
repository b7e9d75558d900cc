import Synchronization

/// What the WebSocket upgrader learnt about a connection's upgrade, for the handler that answers
/// a refused one and for the relay that serves an accepted one.
final class UpgradeNotes: Sendable {
    enum Outcome: Sendable {
        case granted(GatewayGrant)
        case refused(GatewayMetrics.Refusal, String)
    }

    private let outcome = Mutex<Outcome?>(nil)

    func record(_ value: Outcome) { outcome.withLock { $0 = value } }
    var recorded: Outcome? { outcome.withLock { $0 } }
}
