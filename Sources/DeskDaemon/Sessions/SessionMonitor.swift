import ServiceLifecycle

/// Keeps viewer counts, idle times and health current between requests, so a viewer that
/// comes and goes between two `list`s still moves `lastClientAt`.
public struct SessionMonitor: Service {
    let service: SessionService
    let interval: Duration

    public init(service: SessionService, interval: Duration = .seconds(1)) {
        self.service = service
        self.interval = interval
    }

    public func run() async throws {
        while !Task.isCancelledOrShuttingDown {
            await service.refresh(health: true)
            await service.enforceIdleLimit()
            service.environment.audit.writeDueSummaries()
            try? await Task.sleep(for: interval)
        }
    }
}

extension Task where Success == Never, Failure == Never {
    static var isCancelledOrShuttingDown: Bool { isCancelled || Task<Never, Never>.isShuttingDownGracefully }
}
