import DeskFrontProtocol
import NIOCore
import Synchronization

/// The browsers relayed to each session now, so deskd can count them and close them.
final class RelayRegistry: Sendable {
    private struct Relay {
        let grant: GatewayGrant
        let channel: any Channel
    }

    private struct State {
        var relays: [ObjectIdentifier: Relay] = [:]
        /// Relays deskd closed before their channel registered: refused as they come. deskd's
        /// close can overtake the grant itself (it answers the redeem, then a revoke closes the
        /// relay, and the front reads both before the upgrade registers it), so any relay
        /// deskd names that is not registered is kept, the newest `closedEarlyLimit` of them.
        var closedEarly: Set<UInt64> = []
    }

    private let state = Mutex(State())
    /// Far more than can be between a grant and its registration (milliseconds); relay numbers
    /// only grow, so the smallest are the oldest.
    static let closedEarlyLimit = 1024

    /// Registers a relay; false when deskd has already closed it (the caller ends it).
    @discardableResult
    func add(_ channel: any Channel, grant: GatewayGrant) -> Bool {
        state.withLock { state in
            if state.closedEarly.remove(grant.relay) != nil { return false }
            state.relays[ObjectIdentifier(channel)] = Relay(grant: grant, channel: channel)
            return true
        }
    }

    /// A granted relay's connection has closed, whether or not it got as far as relaying.
    func forget(_ relay: UInt64) {
        _ = state.withLock { $0.closedEarly.remove(relay) }
    }

    func remove(_ channel: any Channel) {
        _ = state.withLock { $0.relays.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// The browsers relayed to `sessionID` (every session's with nil); with `viewOnlyOnly`, the
    /// view-only ones.
    func channels(of sessionID: String?, viewOnlyOnly: Bool = false) -> [any Channel] {
        state.withLock { state in
            state.relays.values.filter { (sessionID == nil || $0.grant.sessionID == sessionID) && ($0.grant.viewOnly || !viewOnlyOnly) }.map(\.channel)
        }
    }

    /// The channels of `relays`; a relay not registered yet is remembered, and closed when it is.
    func take(relays: [UInt64]) -> [any Channel] {
        state.withLock { state in
            var found: [any Channel] = []
            for relay in relays {
                if let match = state.relays.values.first(where: { $0.grant.relay == relay }) {
                    found.append(match.channel)
                } else {
                    state.closedEarly.insert(relay)
                    if state.closedEarly.count > Self.closedEarlyLimit, let oldest = state.closedEarly.min() {
                        state.closedEarly.remove(oldest)
                    }
                }
            }
            return found
        }
    }
}
