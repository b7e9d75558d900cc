import DeskCore
import DeskFrontProtocol
import Logging
import ServiceLifecycle

extension SessionService {
    /// deskd's side of its web front: the front socket, and the gateway's and the metrics
    /// endpoint's listeners, bound here (and retried when they cannot be: see
    /// `SideListenerService`) and served by deskd-web. Empty when neither is configured. With
    /// `spawnFront`, deskd also runs deskd-web itself (`FrontLauncher`); otherwise a service
    /// manager does (deskd-web.service).
    public func webFrontServices(spawnFront: Bool, logLevel: String, logger: Logger) -> [any Service] {
        let gateway = configuration.web.gatewayConfiguration
        let metrics = configuration.metricsListen
        guard gateway != nil || metrics != nil else { return [] }
        let fronts = FrontServer(service: self, logger: logger)
        var services: [any Service] = [fronts]
        if let gateway {
            services.append(sideListener(FrontListener(name: "gateway", host: gateway.host, requestedPort: gateway.port, gateway: gateway,
                                                       fronts: fronts, logger: logger), logger: logger))
        }
        if let metrics {
            services.append(sideListener(FrontListener(name: "metrics", host: metrics.host, requestedPort: metrics.port, gateway: nil,
                                                       fronts: fronts, logger: logger), logger: logger))
        }
        if spawnFront { services.append(FrontLauncher(server: fronts, logLevel: logLevel, logger: logger)) }
        return services
    }
}
