import ArgumentParser
import DeskCore
import DeskDaemon
import DeskHost
import DeskLinux
import FoundationEssentials
import Glibc
import Logging
import ServiceLifecycle

@main
struct Deskd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deskd",
        abstract: "The deskd daemon: per-user TigerVNC desktop sessions over a control socket.",
        discussion: """
            Runs in the foreground; systemd runs it as deskd.service (Type=notify). Stopping deskd never \
            stops desktops: the next deskd adopts them.

            Files: /etc/deskd/deskd.toml (optional; every key is documented in deskd.toml.example), \
            /etc/deskd/templates (xstartup templates that override the shipped ones), \
            /run/deskd (the control socket, session records, each session's password file and logs), \
            /var/lib/deskd/audit.log (the audit trail).

            Signals: SIGHUP reloads the configuration without touching sessions; SIGTERM and SIGINT stop deskd.
            """,
        version: DeskVersion.current
    )

    @Option(help: "The configuration file (default: /etc/deskd/deskd.toml, if it exists).")
    var config: String?

    @Flag(name: .customLong("check-config"), help: "Check the configuration file, print what is wrong (file:line) and exit non-zero on an error.")
    var checkConfig = false

    @Option(help: "The control socket (default: $DESKD_SOCKET, daemon.socket, or /run/deskd/deskd.sock).")
    var socket: String?

    @Option(name: .customLong("runtime-dir"), help: "Runtime state: session records and directories (default /run/deskd).")
    var runtimeDirectory: String?

    @Option(name: .customLong("state-dir"), help: "Persistent state: the audit trail (default /var/lib/deskd).")
    var stateDirectory: String?

    @Option(name: .customLong("templates"), help: "A directory of <name>.xstartup templates, searched before the configured ones. Repeatable.")
    var templateDirectories: [String] = []

    @Option(name: .customLong("admin-group"), help: "Members of this group administer every session.")
    var adminGroup: String?

    @Option(name: .customLong("min-uid"), help: "Accounts below this uid get no desktop.")
    var minimumUID: UInt32?

    @Option(name: .customLong("xvnc"), help: "The Xtigervnc executable.")
    var xvncPath: String?

    @Option(name: .customLong("idle-limit"), help: "Kill sessions that have had no viewer this long (90s, 30m, 2h, 1d). Default: never.")
    var idleLimit: String?

    @Option(name: .customLong("xvnc-max-idle"), help: "Xvnc's -MaxIdleTime: Xvnc exits after this long without input.")
    var xvncMaxIdle: String?

    @Option(name: .customLong("xvnc-max-disconnection"), help: "Xvnc's -MaxDisconnectionTime: Xvnc exits after this long with no viewer.")
    var xvncMaxDisconnection: String?

    @Flag(name: .customLong("keep-session-on-desktop-exit"), help: "When the desktop (xstartup) exits, keep Xvnc running. Default: end the session, as vncserver does.")
    var keepSessionOnDesktopExit = false

    /// make man: print deskd.toml(5), dated YYYY-MM-DD, from the key table the parser checks.
    @Option(name: .customLong("print-config-manual"), help: .hidden)
    var configManualDate: String?

    /// Who starts deskd-web, the web front that serves the gateway and the metrics endpoint.
    enum WebFrontStart: String, ExpressibleByArgument, CaseIterable {
        /// deskd starts it as `[web] user` and starts it again if it exits.
        case spawn
        /// A service manager does (deskd-web.service, with its sandbox); deskd only waits for it.
        case external
    }

    @Option(name: .customLong("web-front"), help: "Who starts deskd-web, which serves the gateway and the metrics: spawn (deskd, as web.user; the default) or external (deskd-web.service).")
    var webFront: WebFrontStart = .spawn

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default: daemon.log_level or info).")
    var logLevel: Logger.Level?

    static func seconds(_ text: String?) throws -> Int? {
        do { return try text.map { text throws(DeskError) in try IdleDuration.seconds(parsing: text) } } catch {
            throw ValidationError(error.message)
        }
    }

    func validate() throws {
        _ = try Self.seconds(idleLimit)
        _ = try Self.seconds(xvncMaxIdle)
        _ = try Self.seconds(xvncMaxDisconnection)
        if let date = configManualDate, ConfigurationFile.manual(isoDate: date) == nil {
            throw ValidationError("--print-config-manual takes the page's date as YYYY-MM-DD, not '\(date)'.")
        }
        guard getuid() == 0 || checkConfig || configManualDate != nil else {
            throw ValidationError("deskd must run as root: it starts desktops as other users. Run it with sudo or as deskd.service.")
        }
    }

    /// The file's settings, then the command line's on top.
    func loadConfiguration() throws -> DaemonConfiguration {
        var configuration: DaemonConfiguration
        // Not a ValidationError: a mistake in the file is one line (file:line: reason), not a usage screen.
        configuration = try ConfigurationFile.load(config ?? ConfigurationFile.defaultPath, required: config != nil)
        if let socket { configuration.socketPath = socket } else if let socket = ProcessInfo.processInfo.environment[ControlProtocol.socketEnvironmentKey] {
            configuration.socketPath = socket
        }
        if let runtimeDirectory { configuration.runtimeDirectory = runtimeDirectory }
        if let stateDirectory { configuration.stateDirectory = stateDirectory }
        configuration.templateDirectories = templateDirectories + configuration.templateDirectories
        if let adminGroup { configuration.adminGroup = adminGroup }
        if let minimumUID { configuration.minimumUID = minimumUID }
        if let xvncPath { configuration.xvncPath = xvncPath }
        if keepSessionOnDesktopExit { configuration.desktopExitEndsSession = false }
        if let idleLimit = try Self.seconds(idleLimit) { configuration.idleLimitSeconds = idleLimit }
        if let maxIdle = try Self.seconds(xvncMaxIdle) { configuration.xvncMaxIdleSeconds = maxIdle }
        if let maxDisconnection = try Self.seconds(xvncMaxDisconnection) { configuration.xvncMaxDisconnectionSeconds = maxDisconnection }
        if let logLevel { configuration.logLevel = logLevel.rawValue }
        return configuration
    }

    func run() async throws {
        if let date = configManualDate, let page = ConfigurationFile.manual(isoDate: date) {
            print(page, terminator: "")
            return
        }
        // A helper that died leaves a pipe with no reader: writing to it must fail, not end
        // deskd (systemd ignores SIGPIPE for its services; the build tree and the tests do not).
        signal(SIGPIPE, SIG_IGN)
        let configuration = try loadConfiguration()
        if checkConfig {
            // A TLS file that is not there yet does not fail the check (ExecStartPre runs it): deskd
            // starts without the gateway and waits for the file. Said here so the admin knows.
            for (key, path) in [("web.tls_certificate", configuration.web.tlsCertificate), ("web.tls_key", configuration.web.tlsKey)] {
                if let path, access(path, R_OK) != 0 {
                    let reason = String(cString: strerror(errno))
                    let note = "note: \(key) \(path) cannot be read (\(reason)); deskd serves without the gateway until it can\n"
                    _ = note.withCString { write(STDERR_FILENO, $0, strlen($0)) }
                }
            }
            print("\(config ?? ConfigurationFile.defaultPath): OK")
            return
        }
        DaemonLogHandler.level.withLock { $0 = Logger.Level(rawValue: configuration.logLevel) ?? .info }
        LoggingSystem.bootstrap { _ in DaemonLogHandler() }
        let logger = Logger(label: "deskd")

        // Before anything is read from the runtime directory: a second deskd on it would adopt,
        // and could end, the first one's desktops.
        let lock = try DaemonLock.acquire(directory: configuration.runtimeDirectory, socket: configuration.socketPath)
        defer { withExtendedLifetime(lock) {} }
        let service = try SessionService(configuration: configuration, logger: logger)
        await service.adoptRunningSessions()
        let server = ControlServer(
            socketPath: configuration.socketPath,
            harness: ControlHarness(service: service, logger: logger),
            logger: logger,
            maxConnections: configuration.maxConnections,
            maxConnectionsPerUser: configuration.maxConnectionsPerUser,
            onListening: { SystemdNotifier.notify("READY=1\nSTATUS=serving \(configuration.socketPath)") }
        )
        let reloader = ConfigurationReloader(service: service, logger: logger) { try self.loadConfiguration() }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            // The sessions' own work first: a service group stops its services last to first, and
            // this one must outlive every service that can hand it work (the control server's starts).
            .init(service: service.tasks),
            .init(service: server), .init(service: SessionMonitor(service: service)), .init(service: reloader),
            .init(service: ShutdownWatchdog(logger: logger)),
        ]
        // The browser gateway and the metrics endpoint, when configured. Unlike the control
        // socket, neither may stop deskd: any local user can bind their port first, and the
        // desktops must stay manageable. They wait and try again (deskctl status says why).
        // Both are served by deskd-web, the web front, as an unprivileged user: deskd binds their
        // ports and decides every request, and parses no HTTP, TLS or WebSocket itself.
        for side in service.webFrontServices(spawnFront: webFront == .spawn, logLevel: configuration.logLevel, logger: logger) {
            services.append(.init(service: side))
        }
        if configuration.slurm.isEnabled { services.append(.init(service: ClusterService(service: service))) }
        let group = ServiceGroup(configuration: .init(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        defer { SystemdNotifier.notify("STOPPING=1") }
        try await group.run()
        logger.info("stopped; desktops keep running and the next deskd adopts them")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
