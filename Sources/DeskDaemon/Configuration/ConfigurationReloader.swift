import DeskHost
import DeskLinux
import Logging
import ServiceLifecycle
import UnixSignals

/// SIGHUP reloads the configuration: `systemctl reload deskd`. Running sessions are not
/// touched; limits, templates and Xvnc options apply from the next request. A file with a
/// mistake is refused as a whole and the previous configuration stays in force.
public struct ConfigurationReloader: Service {
    let service: SessionService
    let load: @Sendable () throws -> DaemonConfiguration
    let logger: Logger

    public init(service: SessionService, logger: Logger, load: @escaping @Sendable () throws -> DaemonConfiguration) {
        self.service = service
        self.load = load
        self.logger = logger
    }

    public func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            await reload()
        }
    }

    func reload() async {
        SystemdNotifier.reloading()
        defer { SystemdNotifier.notify("READY=1") }
        let configuration: DaemonConfiguration
        do { configuration = try load() } catch {
            var metadata: Logger.Metadata = ["error": "\(error)"]
            if let error = error as? ConfigurationError { metadata["error.cause"] = "\(error.cause)" }
            logger.error("configuration not reloaded; the previous one stays in force", metadata: metadata)
            return
        }
        let needsRestart = service.reload(configuration)
        if let level = Logger.Level(rawValue: configuration.logLevel) { DaemonLogHandler.level.withLock { $0 = level } }
        logger.notice("configuration reloaded", metadata: ["config.path": "\(configuration.configurationFile ?? "(defaults)")"])
        if !needsRestart.isEmpty {
            logger.warning("some settings take effect only after a restart of deskd", metadata: ["config.keys": "\(needsRestart.joined(separator: ","))"])
        }
    }
}
