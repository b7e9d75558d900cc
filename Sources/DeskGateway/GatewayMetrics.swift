import Synchronization

/// The gateway's counters, cheap enough to bump on every connection.
public final class GatewayMetrics: Sendable {
    /// Why the gateway turned a connection or request away.
    public enum Refusal: String, Sendable, CaseIterable, Comparable {
        /// Too many connections open.
        case capacity
        /// A WebSocket upgrade (or an exchange) from a page of another origin.
        case origin
        /// An upgrade without a cookie, or with one that is unknown, used or expired.
        case cookie
        /// A link token that is unknown, used or expired.
        case token
        /// A request or handshake that did not complete in time.
        case timeout
        /// HTTP the gateway could not parse, or a header block over the limit.
        case malformedRequest = "malformed-request"
        /// A WebSocket frame that is oversized, unmasked, or not binary.
        case frame
        /// RFB the browser should not have sent (a wrong version, an unknown message).
        case rfb
        /// The session's Xvnc could not be reached, was not the session's, or refused the password.
        case desktop

        public static func < (lhs: Refusal, rhs: Refusal) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The counters at one moment.
    public struct Snapshot: Sendable, Equatable {
        public var connectionsOpen: Int
        public var connectionsOpenedTotal: Int
        /// Browsers relayed to a desktop now (they also count as connections).
        public var relaysOpen: Int
        public var relaysOpenedTotal: Int
        public var exchangesAccepted: Int
        public var refused: [Refusal: Int]
    }

    let connectionsOpen = Atomic<Int>(0)
    let connectionsOpenedTotal = Atomic<Int>(0)
    let relaysOpen = Atomic<Int>(0)
    let relaysOpenedTotal = Atomic<Int>(0)
    let exchangesAccepted = Atomic<Int>(0)
    private let refusedCapacity = Atomic<Int>(0)
    private let refusedOrigin = Atomic<Int>(0)
    private let refusedCookie = Atomic<Int>(0)
    private let refusedToken = Atomic<Int>(0)
    private let refusedTimeout = Atomic<Int>(0)
    private let refusedMalformed = Atomic<Int>(0)
    private let refusedFrame = Atomic<Int>(0)
    private let refusedRFB = Atomic<Int>(0)
    private let refusedDesktop = Atomic<Int>(0)

    public init() {}

    public var snapshot: Snapshot {
        Snapshot(
            connectionsOpen: connectionsOpen.load(ordering: .relaxed),
            connectionsOpenedTotal: connectionsOpenedTotal.load(ordering: .relaxed),
            relaysOpen: relaysOpen.load(ordering: .relaxed),
            relaysOpenedTotal: relaysOpenedTotal.load(ordering: .relaxed),
            exchangesAccepted: exchangesAccepted.load(ordering: .relaxed),
            refused: Dictionary(uniqueKeysWithValues: Refusal.allCases.map { ($0, refusedCount($0)) })
        )
    }

    public func refusedCount(_ reason: Refusal) -> Int {
        withCounter(reason) { $0.load(ordering: .relaxed) }
    }

    func refused(_ reason: Refusal) {
        withCounter(reason) { _ = $0.add(1, ordering: .relaxed) }
    }

    /// Counts a new connection in, unless `limit` are open already (then it is counted refused).
    func admitConnection(limit: Int) -> Bool {
        let open = connectionsOpen.add(1, ordering: .relaxed).newValue
        guard open <= limit else {
            connectionsOpen.subtract(1, ordering: .relaxed)
            refused(.capacity)
            return false
        }
        connectionsOpenedTotal.add(1, ordering: .relaxed)
        return true
    }

    func connectionClosed() {
        connectionsOpen.subtract(1, ordering: .relaxed)
    }

    private func withCounter<R>(_ reason: Refusal, _ body: (borrowing Atomic<Int>) -> R) -> R {
        switch reason {
        case .capacity: body(refusedCapacity)
        case .origin: body(refusedOrigin)
        case .cookie: body(refusedCookie)
        case .token: body(refusedToken)
        case .timeout: body(refusedTimeout)
        case .malformedRequest: body(refusedMalformed)
        case .frame: body(refusedFrame)
        case .rfb: body(refusedRFB)
        case .desktop: body(refusedDesktop)
        }
    }
}
