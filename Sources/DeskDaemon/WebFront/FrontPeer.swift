import DeskFrontProtocol
import DeskGatewayMetrics
import DeskLinux
import Glibc
import Synchronization

/// One connection of deskd-web, the web front, to deskd's front socket.
final class FrontPeer: Sendable {
    let socket: RecordSocket
    let credentials: PeerCredentials
    /// What the front last said its gateway had counted (deskd's metrics move from it).
    let counts = Mutex(GatewayMetrics.Snapshot.zero)
    /// Requests being answered now: a front that asks faster than deskd answers is cut off.
    let inFlight = InFlightLimit(1024)
    /// Pages' live updates waiting now, apart: each waits up to half a minute, and they must not
    /// fill `inFlight`. One over is answered "nothing changed" at once.
    let watches = InFlightLimit(512)
    /// Set once its connection has ended (under `BrowserRelays`' lock): no relay is granted to it after.
    let isClosed = Atomic<Bool>(false)

    init(socket: RecordSocket, credentials: PeerCredentials) {
        self.socket = socket
        self.credentials = credentials
    }

    var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// Sends `event` and the descriptors (deskd's copies stay open: the caller closes them).
    /// Never waits: a front that does not read its socket is cut off instead. False when it was
    /// not sent (the front is gone, or now cut off).
    /// `cutOff` false: a full socket fails this send only (the caller answers otherwise), for
    /// a large answer one user's calls can queue up (a listing), which must not end every
    /// user's relays through this front.
    @discardableResult
    func send(_ event: FrontEvent, descriptors: [Int32] = [], cutOff: Bool = true) -> Bool {
        do { try socket.send(FrontWire.encode(event), descriptors: descriptors, wait: false) } catch {
            if cutOff || (error.errno != EAGAIN && error.errno != EWOULDBLOCK) { socket.shutdown() }
            return false
        }
        return true
    }
}
