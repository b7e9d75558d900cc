import DeskFrontProtocol
import DeskGatewayMetrics
import DeskLinux
import Glibc
import Logging
import Synchronization

/// deskd-web, the web front: the browser gateway and the metrics endpoint, in a process of
/// their own as an unprivileged user, so that no HTTP, TLS or WebSocket is parsed as root.
///
/// It connects to deskd's front socket and serves what deskd hands it: the gateway's settings,
/// the listening sockets deskd bound (a port below 1024 needs no privilege here), the TLS
/// material deskd read. It asks deskd about every token and cookie, and receives each
/// desktop's socket already logged in to. When the link ends (deskd restarting, stopping), it
/// closes every connection and listener and connects again.
public struct WebFront: Sendable {
    public let socketPath: String
    public let logger: Logger
    /// Waits between attempts to reach deskd.
    public var retryDelay: Duration = .seconds(1)

    public init(socketPath: String, logger: Logger) {
        self.socketPath = socketPath
        self.logger = logger
    }

    /// Serves until the task is cancelled.
    public func run() async {
        var lastProblem: String?
        // Quick at first (deskd may be making its socket this moment), then every retryDelay.
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                let socket = try RecordSocket.connect(to: socketPath)
                lastProblem = nil
                delay = .milliseconds(50)
                logger.info("connected to deskd", metadata: ["front.socket": "\(socketPath)"])
                await serve(DeskdLink(socket: socket))
                logger.notice("deskd's link ended; connecting again")
            } catch {
                // One line when it starts failing and when the reason changes, not one per attempt.
                if error.description != lastProblem {
                    logger.warning("cannot reach deskd; trying again every second", metadata: ["error": "\(error)"])
                    lastProblem = error.description
                }
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, retryDelay)
        }
    }

    /// One connection to deskd: its events in order, each listener served in a task of its
    /// own, all of them ended when the link ends.
    func serve(_ link: DeskdLink) async {
        let (events, delivery) = AsyncStream.makeStream(of: (FrontEvent, [Int32]).self)
        // The link's reader blocks in recvmsg for as long as the link lasts: a thread of its own,
        // in a task nobody awaits, so a shutdown (which ends the events' loop) never waits for
        // deskd to close the link; the events end when the link does.
        Task {
            await onDedicatedThread {
                link.readEvents { delivery.yield(($0, $1)) }
                delivery.finish()
            }
        }
        let counts = CountsReporter(link: link)
        await withTaskGroup(of: Void.self) { group in
            var gateway: Gateway?
            for await (event, descriptors) in events {
                switch event {
                case .setup(let configuration, let page):
                    gateway = configuration.map {
                        // noVNC's modules as one file where esbuild is installed, made now in the
                        // background (a gateway of a test's own serves them one by one).
                        let bundle = ViewerBundle.installed(directory: $0.novncDirectory)
                        bundle?.prepare()
                        return Gateway(configuration: $0, authority: RemoteAuthority(link: link), portal: RemoteAuthority(link: link), portalPage: page,
                                       viewerBundle: bundle, logger: logger, onMetricsChange: { counts.changed() })
                    }
                    counts.attach(gateway?.metrics)
                case .listen(let name, let tls):
                    guard descriptors.count == 1 else {
                        descriptors.forEach { _ = close($0) }
                        continue
                    }
                    let fd = descriptors[0]
                    if name == "gateway", let gateway {
                        group.addTask { [logger] in
                            do throws(GatewayError) { try await gateway.serve(listeningSocket: fd, tls: tls) } catch {
                                logger.error("gateway not serving", metadata: ["reason": "\(error.message)"])
                                link.tell(.listenerFailed(listener: "gateway", reason: error.message))
                            }
                        }
                    } else if name == "metrics" {
                        let endpoint = MetricsEndpoint(logger: logger) {
                            guard case .scraped(_, let text)? = await link.answer({ .scrape(call: $0) }) else { return "" }
                            return text
                        }
                        group.addTask { [logger] in
                            do throws(GatewayError) { try await endpoint.serve(listeningSocket: fd) } catch {
                                logger.error("metrics not serving", metadata: ["reason": "\(error.message)"])
                                link.tell(.listenerFailed(listener: "metrics", reason: error.message))
                            }
                        }
                    } else {
                        close(fd)
                    }
                case .disconnect(let relays):
                    gateway?.disconnect(relays: relays)
                    descriptors.forEach { _ = close($0) }
                default:
                    descriptors.forEach { _ = close($0) }
                }
            }
            group.cancelAll()
        }
    }
}

/// Tells deskd the gateway's counters soon after they change: one message for a burst.
final class CountsReporter: Sendable {
    private let link: DeskdLink
    private let state = Mutex<(metrics: GatewayMetrics?, scheduled: Bool)>((nil, false))
    /// How long a burst of changes is gathered into one message.
    static let gather: Duration = .milliseconds(20)

    init(link: DeskdLink) {
        self.link = link
    }

    func attach(_ metrics: GatewayMetrics?) {
        state.withLock { $0.metrics = metrics }
    }

    func changed() {
        let start = state.withLock { state -> Bool in
            guard !state.scheduled else { return false }
            state.scheduled = true
            return true
        }
        guard start else { return }
        // Called from the gateway's event loops, synchronously: the burst's one report is a
        // task of its own, which ends after `gather` and holds nothing else.
        Task { [self] in
            try? await Task.sleep(for: Self.gather)
            let metrics = state.withLock { state -> GatewayMetrics? in
                state.scheduled = false
                return state.metrics
            }
            if let metrics { link.tell(.counts(metrics.snapshot)) }
        }
    }
}
