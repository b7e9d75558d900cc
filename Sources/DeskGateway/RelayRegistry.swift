import NIOCore
import Synchronization

/// The browsers relayed to each session now, so deskd can count them and close them.
final class RelayRegistry: Sendable {
    private struct Relay {
        let sessionID: String
        let viewOnly: Bool
        let channel: any Channel
    }

    private let relays = Mutex<[ObjectIdentifier: Relay]>([:])

    func add(_ channel: any Channel, sessionID: String, viewOnly: Bool) {
        relays.withLock { $0[ObjectIdentifier(channel)] = Relay(sessionID: sessionID, viewOnly: viewOnly, channel: channel) }
    }

    func remove(_ channel: any Channel) {
        _ = relays.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// The browsers relayed to `sessionID` (every session's with nil); with `viewOnlyOnly`, the
    /// view-only ones.
    func channels(of sessionID: String?, viewOnlyOnly: Bool = false) -> [any Channel] {
        relays.withLock { relays in
            relays.values.filter { (sessionID == nil || $0.sessionID == sessionID) && ($0.viewOnly || !viewOnlyOnly) }.map(\.channel)
        }
    }
}
