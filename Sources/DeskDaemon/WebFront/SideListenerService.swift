import DeskCore
import DeskFrontProtocol
import DeskHost
import DeskLinux
import FoundationEssentials
import Logging
import ServiceLifecycle
import Synchronization

/// Runs a `SideListener` so that it never takes deskd down: when it cannot listen — a local user
/// bound its port first, its TLS certificate is not there yet — deskd goes on serving the control
/// socket and every desktop, logs one line that names the port and who holds it, reports it to
/// `report` (for `deskctl status` and the metrics), and tries again after a backoff. Any local
/// user can bind an unprivileged port; letting that stop a root daemon (which systemd then
/// restarts into the same wall) would make every desktop on the host unmanageable.
final class SideListenerService: Service, Sendable {
    /// Waits between attempts: doubling from `first`, never more than `longest`.
    struct Backoff: Sendable {
        public var first: Duration
        public var longest: Duration

        public init(first: Duration = .seconds(1), longest: Duration = .seconds(60)) {
            self.first = first
            self.longest = longest
        }

        /// The wait after the `failures`th failure in a row (1-based).
        public func delay(after failures: Int) -> Duration {
            var delay = first
            for _ in 1..<max(1, failures) where delay < longest { delay *= 2 }
            return min(delay, longest)
        }
    }

    let listener: any SideListener
    private let backoff: Backoff
    private let logger: Logger
    private let report: @Sendable (SideListenerStatus) -> Void
    private let holder: @Sendable (Int) -> PortHolder?
    private let status: Mutex<SideListenerStatus>

    /// `holder` finds who listens on a port (sock_diag by default; tests may pass their own).
    init(_ listener: any SideListener, backoff: Backoff = Backoff(), logger: Logger,
                holder: @escaping @Sendable (Int) -> PortHolder? = { PortHolder.of(port: $0) },
                report: @escaping @Sendable (SideListenerStatus) -> Void = { _ in }) {
        self.listener = listener
        self.backoff = backoff
        self.logger = logger
        self.holder = holder
        self.report = report
        let initial = SideListenerStatus(name: listener.name, address: SideListenerStatus.address(host: listener.host, port: listener.requestedPort),
                                         listening: false)
        self.status = Mutex(initial)
        report(initial)
    }

    /// What `deskctl status` shows of it now.
    var current: SideListenerStatus { status.withLock { $0 } }

    func run() async throws {
        try await run(listener)
    }

    private func run<Listener: SideListener>(_ listener: Listener) async throws {
        var failuresInARow = 0
        var lastProblem: String?
        var lastError: GatewayError?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let server: Listener.Bound
            do {
                server = try await listener.listen()
            } catch {
                failuresInARow += 1
                lastError = error
                let delay = backoff.delay(after: failuresInARow)
                let problem = sentence(for: error)
                let updated = status.withLock { status in
                    status.listening = false
                    status.problem = problem
                    status.failedAttempts += 1
                    status.nextAttemptAt = Date().addingTimeInterval(Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
                    return status
                }
                report(updated)
                // One line when it starts failing and when the reason changes, not one per attempt.
                if problem != lastProblem {
                    var metadata: Logger.Metadata = ["listener.address": "\(updated.address)", "reason": "\(problem)"]
                    if let cause = error.cause { metadata["error.cause"] = "\(cause)" }
                    logger.error("\(listener.name) not listening; deskd serves on without it and keeps trying", metadata: metadata)
                    lastProblem = problem
                }
                // A shutdown during the wait ends it early; the loop's condition then ends the service.
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
                continue
            }
            let port = listener.port(of: server) ?? listener.requestedPort
            let updated = status.withLock { status in
                status.listening = true
                status.problem = nil
                status.nextAttemptAt = nil
                status.address = SideListenerStatus.address(host: listener.host, port: port)
                return status
            }
            report(updated)
            if failuresInARow > 0 {
                logger.notice("\(listener.name) listening after \(failuresInARow) failed attempt\(failuresInARow == 1 ? "" : "s")", metadata: [
                    "listener.address": "\(updated.address)",
                ])
            }
            await listener.serve(server)
            return
        }
        if let lastError { listener.abandon(lastError) }
    }

    /// The error's sentence, and who holds the port when the bind was refused and deskd can tell.
    private func sentence(for error: GatewayError) -> String {
        guard error.code == .bindFailed, listener.requestedPort != 0, let holder = holder(listener.requestedPort) else { return error.message }
        // A user who holds the port may answer in deskd's place: say so, and what prevents it.
        let advice = listener.requestedPort < 1024 || holder.uid == 0 ? "" : " (a port below 1024 cannot be taken by a user)"
        return "\(error.message); port \(listener.requestedPort) is held by \(holder), so what connects there reaches that program, not deskd\(advice)"
    }
}
