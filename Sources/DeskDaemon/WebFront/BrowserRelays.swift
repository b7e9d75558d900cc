import DeskFrontProtocol
import Synchronization

/// Every browser relay deskd has granted, by its number: which session and front it belongs to,
/// and how to log in to the desktop for it. The sessions count their browsers here and close them
/// through it; the fronts' requests name relays by number and get only their own.
final class BrowserRelays: Sendable {
    struct Relay: Sendable {
        /// The link it came through.
        let link: BrowserLinks.Grant
        var sessionID: String { link.sessionID }
        var viewOnly: Bool { link.viewOnly }
        var share: String { link.share }
        /// The session's link epoch when the cookie was spent (`BrowserLinks.isRevoked`).
        let epoch: UInt64
        let login: DesktopLogin
        let front: FrontPeer
        /// Its desktop's socket has been handed over: a relay is one browser's, once.
        var opened = false
    }

    private struct State {
        var relays: [UInt64: Relay] = [:]
        var next: UInt64 = 1
    }

    private let state = Mutex(State())

    /// Registers a relay for `front`; its number, or nil if that front has gone meanwhile.
    func grant(_ link: BrowserLinks.Grant, epoch: UInt64, login: DesktopLogin, front: FrontPeer) -> UInt64? {
        state.withLock { state in
            guard !front.isClosed.load(ordering: .relaxed) else { return nil }
            defer { state.next += 1 }
            state.relays[state.next] = Relay(link: link, epoch: epoch, login: login, front: front)
            return state.next
        }
    }

    /// `number`, if it is `front`'s, still open and not yet opened: marked opened now.
    func open(_ number: UInt64, of front: FrontPeer) -> Relay? {
        state.withLock { state in
            guard let relay = state.relays[number], relay.front === front, !relay.opened else { return nil }
            state.relays[number]?.opened = true
            return relay
        }
    }

    /// Whether `number` is still `front`'s and open (no revoke, no end of its session since).
    func isOpen(_ number: UInt64, of front: FrontPeer) -> Bool {
        state.withLock { $0.relays[number]?.front === front }
    }

    /// `number` has ended, if it is `front`'s.
    func end(_ number: UInt64, of front: FrontPeer) {
        state.withLock { state in
            if state.relays[number]?.front === front { state.relays[number] = nil }
        }
    }

    /// Every relay of a front that has gone; none is granted to it after this.
    func endAll(of front: FrontPeer) {
        state.withLock { state in
            front.isClosed.store(true, ordering: .relaxed)
            state.relays = state.relays.filter { $0.value.front !== front }
        }
    }

    func count(sessionID: String) -> Int {
        state.withLock { $0.relays.values.count { $0.sessionID == sessionID } }
    }

    /// The session's browsers by the share they came through: each share's link, and how many.
    func sharesInUse(sessionID: String) -> [String: (link: BrowserLinks.Grant, browsers: Int)] {
        state.withLock { state in
            state.relays.values.filter { $0.sessionID == sessionID }.reduce(into: [:]) { shares, relay in
                shares[relay.share, default: (relay.link, 0)].browsers += 1
            }
        }
    }

    /// Closes the session's browsers (with `viewOnlyOnly`, its view-only ones; with `share`, that
    /// share's); how many. They stop counting at once; each front is told which of its relays to close.
    @discardableResult
    func disconnect(sessionID: String, viewOnlyOnly: Bool = false, share: String? = nil) -> Int {
        let closed = state.withLock { state -> [(UInt64, Relay)] in
            let closing = state.relays.filter {
                $0.value.sessionID == sessionID && ($0.value.viewOnly || !viewOnlyOnly) && (share == nil || $0.value.share == share)
            }
            for number in closing.keys { state.relays[number] = nil }
            return closing.map { ($0.key, $0.value) }
        }
        var byFront: [ObjectIdentifier: (FrontPeer, [UInt64])] = [:]
        for (number, relay) in closed { byFront[relay.front.id, default: (relay.front, [])].1.append(number) }
        for (front, numbers) in byFront.values { front.send(.disconnect(relays: numbers.sorted())) }
        return closed.count
    }
}
