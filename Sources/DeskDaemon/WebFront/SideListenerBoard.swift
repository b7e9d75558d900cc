import CoreMetrics
import DeskCore
import DeskFrontProtocol
import Logging
import Synchronization

/// The gateway's and the metrics endpoint's state, as their `SideListenerService`s report it:
/// read by `deskctl status` and at each metrics scrape.
final class SideListenerBoard: Sendable {
    private let listeners = Mutex<[String: SideListenerStatus]>([:])
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func record(_ status: SideListenerStatus) {
        let earlier = listeners.withLock { listeners in
            defer { listeners[status.name] = status }
            return listeners[status.name]?.failedAttempts ?? 0
        }
        if status.failedAttempts > earlier {
            CoreMetrics.Counter(label: "deskd_listener_bind_failures_total", dimensions: [("listener", status.name)], factory: factory)
                .increment(by: status.failedAttempts - earlier)
        }
    }

    /// The web front could not serve `name` (or there is no front): shown as not listening, with why.
    func frontFailed(_ name: String, reason: String) {
        listeners.withLock { listeners in
            var status = listeners[name] ?? SideListenerStatus(name: name, address: "", listening: false)
            status.listening = false
            status.problem = reason
            status.nextAttemptAt = nil
            listeners[name] = status
        }
    }

    /// By name, for a stable order in `deskctl status`.
    var all: [SideListenerStatus] {
        listeners.withLock { $0.values.sorted { $0.name < $1.name } }
    }
}

extension SessionService {
    /// Runs `listener` (the gateway or the metrics endpoint) so that it never stops deskd: one
    /// that cannot listen is tried again, and shown in `deskctl status` and the metrics.
    func sideListener(_ listener: any SideListener, logger: Logger,
                             backoff: SideListenerService.Backoff = .init()) -> SideListenerService {
        let board = environment.listeners
        return SideListenerService(listener, backoff: backoff, logger: logger, report: { board.record($0) })
    }
}
