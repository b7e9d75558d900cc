import CoreMetrics
import DeskFrontProtocol
import Synchronization

/// The gateway's counters, cheap enough to bump on every connection. Each is kept twice: in an
/// atomic, for the gateway's own decisions and its `snapshot`, and through swift-metrics into
/// whatever factory deskd hands in (Prometheus's, for `deskctl metrics` and `/metrics`). deskd-web
/// counts with it; deskd absorbs what its front says into its own (`absorb`).
public final class GatewayMetrics: Sendable {
    public typealias Refusal = GatewayCounts.Refusal
    public typealias Cut = GatewayCounts.Cut
    public typealias Snapshot = GatewayCounts.Snapshot

    private let connectionsOpen = Atomic<Int>(0)
    private let connectionsOpenedTotal = Atomic<Int>(0)
    private let relaysOpen = Atomic<Int>(0)
    private let relaysOpenedTotal = Atomic<Int>(0)
    private let exchangesAccepted = Atomic<Int>(0)
    private let refusedCapacity = Atomic<Int>(0)
    private let refusedAddressCapacity = Atomic<Int>(0)
    private let refusedOrigin = Atomic<Int>(0)
    private let refusedCookie = Atomic<Int>(0)
    private let refusedToken = Atomic<Int>(0)
    private let refusedTimeout = Atomic<Int>(0)
    private let refusedMalformed = Atomic<Int>(0)
    private let refusedFrame = Atomic<Int>(0)
    private let refusedRFB = Atomic<Int>(0)
    private let refusedDesktop = Atomic<Int>(0)
    private let refusedForgedUser = Atomic<Int>(0)
    private let refusedStreamCapacity = Atomic<Int>(0)
    private let refusedUnknownOwner = Atomic<Int>(0)
    private let cutIdle = Atomic<Int>(0)
    private let cutNotReading = Atomic<Int>(0)

    private let reported: Reported
    /// Called after every change (deskd-web tells deskd its counts from here).
    private let onChange: (@Sendable () -> Void)?

    /// The swift-metrics side: names as Prometheus shows them, no per-user or per-session labels.
    private struct Reported: Sendable {
        let connections: Meter
        let connectionsTotal: CoreMetrics.Counter
        let relays: Meter
        let relaysTotal: CoreMetrics.Counter
        let tokensExchanged: CoreMetrics.Counter
        let tokensRefused: CoreMetrics.Counter
        let refused: [Refusal: CoreMetrics.Counter]
        let cut: [Cut: CoreMetrics.Counter]

        init(factory: any MetricsFactory) {
            connections = Meter(label: "deskd_gateway_connections", factory: factory)
            connectionsTotal = CoreMetrics.Counter(label: "deskd_gateway_connections_total", factory: factory)
            relays = Meter(label: "deskd_gateway_relays", factory: factory)
            relaysTotal = CoreMetrics.Counter(label: "deskd_gateway_relays_total", factory: factory)
            tokensExchanged = CoreMetrics.Counter(label: "deskd_gateway_tokens_total", dimensions: [("result", "exchanged")], factory: factory)
            tokensRefused = CoreMetrics.Counter(label: "deskd_gateway_tokens_total", dimensions: [("result", "refused")], factory: factory)
            refused = Dictionary(uniqueKeysWithValues: Refusal.allCases.map { reason in
                (reason, CoreMetrics.Counter(label: "deskd_gateway_refusals_total", dimensions: [("reason", reason.rawValue)], factory: factory))
            })
            cut = Dictionary(uniqueKeysWithValues: Cut.allCases.map { reason in
                (reason, CoreMetrics.Counter(label: "deskd_gateway_relays_cut_total", dimensions: [("reason", reason.rawValue)], factory: factory))
            })
        }
    }

    /// `factory` receives every counter as well; the default keeps them here only.
    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance, onChange: (@Sendable () -> Void)? = nil) {
        reported = Reported(factory: factory)
        self.onChange = onChange
    }

    /// deskd's side of a gateway that runs in its web front: moves the reported metrics from what
    /// the front said last (`earlier`) to what it says now. Totals only ever grow, so a front
    /// that restarted from zero adds nothing until it passes what it had; open counts follow it.
    /// Both must be `isPlausible` (the arithmetic below cannot overflow then).
    public func absorb(from earlier: Snapshot, to now: Snapshot) {
        guard earlier.isPlausible, now.isPlausible else { return }
        func grown(_ old: Int, _ new: Int) -> Int64 { Int64(max(0, new - old)) }
        reported.connectionsTotal.increment(by: grown(earlier.connectionsOpenedTotal, now.connectionsOpenedTotal))
        reported.relaysTotal.increment(by: grown(earlier.relaysOpenedTotal, now.relaysOpenedTotal))
        reported.tokensExchanged.increment(by: grown(earlier.exchangesAccepted, now.exchangesAccepted))
        reported.tokensRefused.increment(by: grown(earlier.refused[.token] ?? 0, now.refused[.token] ?? 0))
        for reason in Refusal.allCases {
            let more = max(0, (now.refused[reason] ?? 0) - (earlier.refused[reason] ?? 0))
            withCounter(reason) { _ = $0.add(more, ordering: .relaxed) }
            reported.refused[reason]?.increment(by: Int64(more))
        }
        for reason in Cut.allCases {
            reported.cut[reason]?.increment(by: grown(earlier.cut[reason] ?? 0, now.cut[reason] ?? 0))
        }
        let connections = now.connectionsOpen - earlier.connectionsOpen
        let relays = now.relaysOpen - earlier.relaysOpen
        connectionsOpen.add(connections, ordering: .relaxed)
        relaysOpen.add(relays, ordering: .relaxed)
        connectionsOpenedTotal.add(max(0, now.connectionsOpenedTotal - earlier.connectionsOpenedTotal), ordering: .relaxed)
        relaysOpenedTotal.add(max(0, now.relaysOpenedTotal - earlier.relaysOpenedTotal), ordering: .relaxed)
        exchangesAccepted.add(max(0, now.exchangesAccepted - earlier.exchangesAccepted), ordering: .relaxed)
        if connections > 0 { reported.connections.increment(by: Double(connections)) } else if connections < 0 { reported.connections.decrement(by: Double(-connections)) }
        if relays > 0 { reported.relays.increment(by: Double(relays)) } else if relays < 0 { reported.relays.decrement(by: Double(-relays)) }
    }

    public var snapshot: Snapshot {
        Snapshot(
            connectionsOpen: connectionsOpen.load(ordering: .relaxed),
            connectionsOpenedTotal: connectionsOpenedTotal.load(ordering: .relaxed),
            relaysOpen: relaysOpen.load(ordering: .relaxed),
            relaysOpenedTotal: relaysOpenedTotal.load(ordering: .relaxed),
            exchangesAccepted: exchangesAccepted.load(ordering: .relaxed),
            refused: Dictionary(uniqueKeysWithValues: Refusal.allCases.map { ($0, refusedCount($0)) }),
            cut: [.idle: cutIdle.load(ordering: .relaxed), .notReading: cutNotReading.load(ordering: .relaxed)]
        )
    }

    public func cut(_ reason: Cut) {
        defer { onChange?() }
        switch reason {
        case .idle: cutIdle.add(1, ordering: .relaxed)
        case .notReading: cutNotReading.add(1, ordering: .relaxed)
        }
        reported.cut[reason]?.increment()
    }

    public func refusedCount(_ reason: Refusal) -> Int {
        withCounter(reason) { $0.load(ordering: .relaxed) }
    }

    public func refused(_ reason: Refusal) {
        defer { onChange?() }
        withCounter(reason) { _ = $0.add(1, ordering: .relaxed) }
        reported.refused[reason]?.increment()
        if reason == .token { reported.tokensRefused.increment() }
    }

    /// A link's token traded for a cookie.
    public func exchanged() {
        defer { onChange?() }
        exchangesAccepted.add(1, ordering: .relaxed)
        reported.tokensExchanged.increment()
    }

    public func relayOpened() {
        defer { onChange?() }
        relaysOpen.add(1, ordering: .relaxed)
        relaysOpenedTotal.add(1, ordering: .relaxed)
        reported.relays.increment()
        reported.relaysTotal.increment()
    }

    public func relayClosed() {
        defer { onChange?() }
        relaysOpen.subtract(1, ordering: .relaxed)
        reported.relays.decrement()
    }

    /// Counts a new connection in, unless `limit` are open already (then it is counted refused).
    public func admitConnection(limit: Int) -> Bool {
        let open = connectionsOpen.add(1, ordering: .relaxed).newValue
        guard open <= limit else {
            connectionsOpen.subtract(1, ordering: .relaxed)
            refused(.capacity)
            return false
        }
        connectionsOpenedTotal.add(1, ordering: .relaxed)
        defer { onChange?() }
        reported.connections.increment()
        reported.connectionsTotal.increment()
        return true
    }

    public func connectionClosed() {
        defer { onChange?() }
        connectionsOpen.subtract(1, ordering: .relaxed)
        reported.connections.decrement()
    }

    private func withCounter<R>(_ reason: Refusal, _ body: (borrowing Atomic<Int>) -> R) -> R {
        switch reason {
        case .capacity: body(refusedCapacity)
        case .addressCapacity: body(refusedAddressCapacity)
        case .origin: body(refusedOrigin)
        case .cookie: body(refusedCookie)
        case .token: body(refusedToken)
        case .timeout: body(refusedTimeout)
        case .malformedRequest: body(refusedMalformed)
        case .frame: body(refusedFrame)
        case .rfb: body(refusedRFB)
        case .desktop: body(refusedDesktop)
        case .forgedUser: body(refusedForgedUser)
        case .streamCapacity: body(refusedStreamCapacity)
        case .unknownOwner: body(refusedUnknownOwner)
        }
    }
}
