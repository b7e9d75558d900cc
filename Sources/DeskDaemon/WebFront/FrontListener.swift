import DeskCore
import DeskFrontProtocol
import DeskLinux
import Glibc
import Logging
import ServiceLifecycle

/// The gateway's or the metrics endpoint's listening socket, bound by deskd (so a port below
/// 1024 needs no privilege in the front) and handed to deskd-web, which serves it. Run by a
/// `SideListenerService`: a port a local user took first, or a TLS file not there yet, is
/// tried again, and shown in `deskctl status`, as when deskd served them itself.
struct FrontListener: SideListener {
    /// A bound socket, and for the gateway its TLS material.
    struct Bound: Sendable {
        let fd: Int32
        let port: Int?
        let tls: TLSMaterial?
    }

    let name: String
    let host: String
    let requestedPort: Int
    /// The gateway's settings, checked and its TLS files read at each attempt; nil for metrics.
    let gateway: GatewayConfiguration?
    let fronts: FrontServer
    let logger: Logger

    func listen() async throws(GatewayError) -> Bound {
        var tls: TLSMaterial?
        if let gateway {
            try gateway.validate()
            tls = try TLSMaterial.read(for: gateway)
        }
        let what = name == "gateway" ? "the gateway" : "the metrics endpoint"
        do {
            let fd = try InternetSocketAddress.listen(host: host, port: requestedPort)
            let port = InternetSocketAddress.anyBoundPort(of: fd)
            logger.info("\(name) listening, served by deskd-web", metadata: ["listener.host": "\(host)", "listener.port": "\(port ?? requestedPort)"])
            if gateway == nil && !GatewayConfiguration.isLoopback(host) {
                logger.warning("metrics are served without authentication beyond loopback; firewall the port to the monitoring hosts", metadata: ["metrics.host": "\(host)"])
            }
            return Bound(fd: fd, port: port, tls: tls)
        } catch {
            throw GatewayError(.bindFailed, "\(what) could not listen on \(host) port \(requestedPort): \(error.reason)", cause: .init(error))
        }
    }

    func port(of bound: Bound) -> Int? { bound.port }

    /// Hands the socket to every web front, now and as they connect, until deskd stops.
    func serve(_ bound: Bound) async {
        fronts.offer(FrontServer.Offer(name: name, fd: bound.fd, tls: bound.tls))
        try? await gracefulShutdown()
        fronts.withdraw(name)
        close(bound.fd)
    }
}
