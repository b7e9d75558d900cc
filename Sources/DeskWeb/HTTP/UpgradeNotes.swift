import DeskFrontProtocol
import DeskGatewayMetrics
import Glibc
import Synchronization

/// What the WebSocket upgrader learnt about a connection's upgrade, for the handler that answers
/// a refused one and for the relay that serves an accepted one.
final class UpgradeNotes: Sendable {
    enum Outcome: Sendable {
        case granted(GatewayGrant)
        case refused(GatewayMetrics.Refusal, String)
    }

    private let outcome = Mutex<Outcome?>(nil)
    /// The granted relay's desktop, as deskd handed it over with the grant, until the relay
    /// takes it; the connection's close closes a socket no relay took.
    private let desktop = Mutex<Result<Int32, DesktopRefusal>?>(nil)

    func record(_ value: Outcome) { outcome.withLock { $0 = value } }
    var recorded: Outcome? { outcome.withLock { $0 } }

    func hold(_ redemption: Redemption) {
        let earlier = desktop.withLock { held in
            defer { held = redemption.desktop }
            return held
        }
        if case .success(let fd)? = earlier { close(fd) }
        record(.granted(redemption.grant))
    }

    /// The desktop, once: the relay's from here.
    func takeDesktop() -> Result<Int32, DesktopRefusal>? {
        desktop.withLock { held in
            defer { held = nil }
            return held
        }
    }

    /// The connection has closed: a desktop socket no relay took is closed here.
    func dropDesktop() {
        if case .success(let fd)? = takeDesktop() { close(fd) }
    }
}
