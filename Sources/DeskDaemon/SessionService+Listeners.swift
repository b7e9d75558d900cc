import DeskCore
import DeskGateway
import Logging

extension SessionService {
    /// The browser gateway `[web]` asks for, answering to this service's links; nil when it is off.
    public func browserGateway(logger: Logger) -> Gateway? {
        guard let settings = configuration.web.gatewayConfiguration else { return nil }
        let gateway = Gateway(configuration: settings, authority: LinkAuthority(service: self), logger: logger,
                              metricsFactory: environment.metrics.factory)
        // Sessions close their browsers when they end, and count them for the metrics.
        environment.browsers.attach(gateway)
        return gateway
    }

    /// `/metrics` on the listener `[metrics] listen` names; nil when it is off.
    public func metricsEndpoint(logger: Logger) -> MetricsEndpoint? {
        guard let listen = configuration.metricsListen else { return nil }
        return MetricsEndpoint(host: listen.host, port: listen.port, logger: logger) { [self] in await metricsText() }
    }
}
