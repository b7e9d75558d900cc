import DeskGateway
import Synchronization

/// The sessions' view of the browser gateway, once there is one: how many browsers watch a
/// session, and closing them when it ends. Without a gateway both are no-ops.
final class BrowserRelays: Sendable {
    private let gateway = Mutex<Gateway?>(nil)

    func attach(_ gateway: Gateway) {
        self.gateway.withLock { $0 = gateway }
    }

    func count(sessionID: String) -> Int {
        gateway.withLock { $0 }?.relays(sessionID: sessionID) ?? 0
    }

    /// Closes the session's browsers (with `viewOnlyOnly`, its view-only ones); how many.
    @discardableResult
    func disconnect(sessionID: String, viewOnlyOnly: Bool = false) -> Int {
        gateway.withLock { $0 }?.disconnect(sessionID: sessionID, viewOnlyOnly: viewOnlyOnly) ?? 0
    }
}
