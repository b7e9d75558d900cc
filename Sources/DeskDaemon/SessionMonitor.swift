import ServiceLifecycle

/// Keeps viewer counts, idle times and health current between requests, so a viewer that
/// comes and goes between two `list`s still moves `lastClientAt`.
public struct SessionMonitor: Service {
    let manager: SessionManager
    let interval: Duration

    public init(manager: SessionManager, interval: Duration = .seconds(1)) {
        self.manager = manager
        self.interval = interval
    }

    public func run() async throws {
        while !Task.isCancelledOrShuttingDown {
            await manager.refresh()
            await manager.enforceIdleLimit()
            try? await Task.sleep(for: interval)
        }
    }
}

extension Task where Success == Never, Failure == Never {
    static var isCancelledOrShuttingDown: Bool { isCancelled || Task<Never, Never>.isShuttingDownGracefully }
}
