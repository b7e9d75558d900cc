import CoreMetrics
import DeskCore
import Prometheus

/// deskd's metrics, in Prometheus's text format for `deskctl metrics` and `[metrics] listen`.
///
/// What happens (starts, their latency, failures, ends) is counted through swift-metrics as it
/// happens; what is (sessions by state, viewers, free displays, memory) is read at each scrape
/// and set on gauges. The registry is deskd's own, not the process-wide MetricsSystem, so tests
/// that run many services in one process each see their own numbers.
///
/// No label names a user, a session or an address: the text may go to a monitoring system
/// every user's admin can read, and label values must stay few.
final class DaemonMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    /// For the gateway's counters, which land in the same registry.
    let factory: PrometheusMetricsFactory

    static let startLatencyName = "deskd_session_start_seconds"

    private let started: CoreMetrics.Counter
    private let failed: CoreMetrics.Counter
    private let startLatency: CoreMetrics.Timer

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // A start is Xvnc's launch plus a PAM login: tens of milliseconds to seconds.
        factory.durationHistogramBuckets[Self.startLatencyName] = [
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(400),
            .milliseconds(800), .seconds(1.5), .seconds(3), .seconds(6), .seconds(12), .seconds(30),
        ]
        self.factory = factory
        started = CoreMetrics.Counter(label: "deskd_session_starts_total", dimensions: [("result", "started")], factory: factory)
        failed = CoreMetrics.Counter(label: "deskd_session_starts_total", dimensions: [("result", "failed")], factory: factory)
        startLatency = CoreMetrics.Timer(label: Self.startLatencyName, factory: factory)
        // Every series exists from the start at 0, so a rate() over a fresh deskd has a baseline.
        for kind in EndCause.Kind.allCases { _ = endedCounter(kind) }
        for direction in FileDirection.allCases {
            for result in ["completed", "cancelled", "failed", "refused"] { _ = fileTransfers(direction, result) }
            _ = CoreMetrics.Counter(label: "deskd_file_bytes_total", dimensions: [("direction", direction.rawValue)], factory: factory)
        }
    }

    // MARK: Events

    func sessionStarted(after latency: Duration) {
        started.increment()
        startLatency.recordNanoseconds(latency.components.seconds * 1_000_000_000 + latency.components.attoseconds / 1_000_000_000)
    }

    /// A start refused or failed, by the error's code (a few dozen fixed values).
    func startFailed(_ code: DeskError.Code) {
        failed.increment()
        // The registry hands back the same counter for the same name and labels.
        CoreMetrics.Counter(label: "deskd_session_start_failures_total", dimensions: [("reason", code.rawValue)], factory: factory).increment()
    }

    func sessionEnded(_ cause: EndCause) {
        endedCounter(cause.kind).increment()
    }

    /// A portal file transfer's end, and its bytes, by direction and outcome (no name, no user).
    func fileTransferEnded(_ direction: FileDirection, outcome: TransferOutcome, bytes: UInt64) {
        let result = switch outcome {
        case .completed: "completed"
        case .cancelled: "cancelled"
        case .failed: "failed"
        }
        fileTransfers(direction, result).increment()
        CoreMetrics.Counter(label: "deskd_file_bytes_total", dimensions: [("direction", direction.rawValue)], factory: factory)
            .increment(by: Int64(clamping: bytes))
    }

    /// A transfer refused before it began (a limit, a size, the file system's word).
    func fileTransferRefused(_ direction: FileDirection?) {
        guard let direction else { return }
        fileTransfers(direction, "refused").increment()
    }

    private func fileTransfers(_ direction: FileDirection, _ result: String) -> CoreMetrics.Counter {
        CoreMetrics.Counter(label: "deskd_file_transfers_total", dimensions: [("direction", direction.rawValue), ("result", result)], factory: factory)
    }

    private func endedCounter(_ kind: EndCause.Kind) -> CoreMetrics.Counter {
        CoreMetrics.Counter(label: "deskd_sessions_ended_total", dimensions: [("reason", kind.rawValue)], factory: factory)
    }

    // MARK: Scrape

    /// What is true at a scrape, set on the gauges just before the text is written.
    struct Sample: Sendable {
        var sessionsByState: [SessionState: Int]
        var nativeViewers: Int
        var browserViewers: Int
        var freeDisplays: Int
        var outstandingLinks: Int
        var listeners: [SideListenerStatus] = []
        var residentBytes: Int?
    }

    /// A gauge's name and help. Made each time: swift-prometheus's descriptor is not Sendable,
    /// so it cannot be a shared constant.
    private static func gauge(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "deskd", metricName: name, unitName: "", helpText: help)
    }

    private static var sessions: MetricNameDescriptor { gauge("sessions", "Sessions deskd holds, by state.") }
    private static var viewers: MetricNameDescriptor {
        gauge("viewers", "Viewers connected to sessions: native VNC clients, and browsers through the gateway.")
    }
    private static var freeDisplays: MetricNameDescriptor {
        gauge("displays_free", "Displays in the configured range that no deskd session holds (X servers deskd did not start are not subtracted).")
    }
    private static var outstandingLinks: MetricNameDescriptor {
        gauge("browser_links_outstanding", "One-time browser links minted and not yet used or expired.")
    }
    private static var listenerUp: MetricNameDescriptor {
        gauge("listener_up", "1 while the gateway or the metrics endpoint listens, 0 while deskd keeps trying to (deskctl status says why).")
    }
    private static var resident: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "process", metricName: "resident_memory", unitName: "bytes", helpText: "deskd's resident memory.")
    }

    func text(with sample: Sample) -> String {
        for state in SessionState.allCases {
            registry.makeGauge(descriptor: Self.sessions, labels: [("state", state.rawValue)]).set(Double(sample.sessionsByState[state] ?? 0))
        }
        registry.makeGauge(descriptor: Self.viewers, labels: [("kind", "native")]).set(Double(sample.nativeViewers))
        registry.makeGauge(descriptor: Self.viewers, labels: [("kind", "browser")]).set(Double(sample.browserViewers))
        registry.makeGauge(descriptor: Self.freeDisplays).set(Double(sample.freeDisplays))
        registry.makeGauge(descriptor: Self.outstandingLinks).set(Double(sample.outstandingLinks))
        for listener in sample.listeners {
            registry.makeGauge(descriptor: Self.listenerUp, labels: [("listener", listener.name)]).set(Double(listener.listening ? 1 : 0))
        }
        if let bytes = sample.residentBytes { registry.makeGauge(descriptor: Self.resident).set(Double(bytes)) }
        return registry.emitToString()
    }
}
