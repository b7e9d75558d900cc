import DeskLinux
import FoundationEssentials
import Glibc
import Logging
import ServiceLifecycle

/// SIGTERM always stops deskd. A graceful shutdown waits for requests in flight (a start may
/// wait out its timeout); if anything still holds deskd `limit` after the shutdown began (a
/// syscall that never returns, a bug), a thread of its own ends the process. Sessions are
/// separate processes and survive, as after any stop: the next deskd adopts them.
public struct ShutdownWatchdog: Service {
    let limit: Duration
    let logger: Logger

    public init(limit: Duration = .seconds(30), logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    public func run() async throws {
        // Returns when the shutdown begins, or at once when cancelled.
        try? await gracefulShutdown()
        let limit = self.limit, logger = self.logger
        DetachedThread.start(name: "deskd-watchdog") {
            var request = timespec(tv_sec: Int(limit.components.seconds), tv_nsec: Int(limit.components.attoseconds / 1_000_000_000))
            var remaining = timespec()
            // A signal cuts the sleep short; sleep the rest.
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
            logger.critical("shutdown did not finish in time; exiting now (sessions keep running)", metadata: ["shutdown.limit": "\(limit)"])
            _exit(1)
        }
    }
}
