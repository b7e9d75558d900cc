import ArgumentParser
import DeskCore
import DeskDaemon
import Foundation
import Logging
import ServiceLifecycle

@main
struct Deskd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deskd",
        abstract: "The deskd daemon: per-user TigerVNC desktop sessions over a control socket.",
        discussion: "Runs in the foreground; systemd runs it as deskd.service. Stopping deskd never stops desktops.",
        version: DeskVersion.current
    )

    @Option(help: "The control socket (default: $DESKD_SOCKET or /run/deskd/deskd.sock).")
    var socket: String?

    @Option(name: .customLong("state-dir"), help: "Where runtime state lives.")
    var stateDirectory: String = "/run/deskd"

    @Option(name: .customLong("templates"), help: "A directory of <name>.xstartup templates, searched before the built-in locations. Repeatable.")
    var templateDirectories: [String] = []

    @Option(name: .customLong("admin-group"), help: "Members of this group administer every session.")
    var adminGroup: String = "deskd-admin"

    @Option(name: .customLong("min-uid"), help: "Accounts below this uid get no desktop.")
    var minimumUID: UInt32 = 1000

    @Option(name: .customLong("xvnc"), help: "The Xtigervnc executable.")
    var xvncPath: String = "/usr/bin/Xtigervnc"

    @Option(name: .customLong("idle-limit"), help: "Kill sessions that have had no viewer this long (90s, 30m, 2h, 1d). Default: never.")
    var idleLimit: String?

    @Option(name: .customLong("xvnc-max-idle"), help: "Xvnc's -MaxIdleTime: Xvnc exits after this long without input.")
    var xvncMaxIdle: String?

    @Option(name: .customLong("xvnc-max-disconnection"), help: "Xvnc's -MaxDisconnectionTime: Xvnc exits after this long with no viewer.")
    var xvncMaxDisconnection: String?

    @Flag(name: .customLong("keep-session-on-desktop-exit"), help: "When the desktop (xstartup) exits, keep Xvnc running. Default: end the session, as vncserver does.")
    var keepSessionOnDesktopExit = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    static func seconds(_ text: String?) throws -> Int? {
        do { return try text.map { text throws(DeskError) in try IdleDuration.seconds(parsing: text) } } catch {
            throw ValidationError(error.message)
        }
    }

    func validate() throws {
        _ = try Self.seconds(idleLimit)
        _ = try Self.seconds(xvncMaxIdle)
        _ = try Self.seconds(xvncMaxDisconnection)
        guard getuid() == 0 else {
            throw ValidationError("deskd must run as root: it starts desktops as other users. Run it with sudo or as deskd.service.")
        }
    }

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "deskd")

        var configuration = DaemonConfiguration()
        configuration.socketPath = socket ?? ProcessInfo.processInfo.environment[ControlProtocol.socketEnvironmentKey] ?? ControlProtocol.defaultSocketPath
        configuration.stateDirectory = stateDirectory
        configuration.templateDirectories = templateDirectories + configuration.templateDirectories
        configuration.adminGroup = adminGroup
        configuration.minimumUID = minimumUID
        configuration.xvncPath = xvncPath
        configuration.desktopExitEndsSession = !keepSessionOnDesktopExit
        configuration.idleLimitSeconds = try Self.seconds(idleLimit)
        configuration.xvncMaxIdleSeconds = try Self.seconds(xvncMaxIdle)
        configuration.xvncMaxDisconnectionSeconds = try Self.seconds(xvncMaxDisconnection)

        let manager = try SessionManager(configuration: configuration, logger: logger)
        await manager.adoptRunningSessions()
        let server = ControlServer(
            socketPath: configuration.socketPath,
            handler: ControlHandler(manager: manager, configuration: configuration, logger: logger),
            logger: logger
        )
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: server), .init(service: SessionMonitor(manager: manager))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
        logger.info("stopped; desktops keep running and the next deskd adopts them")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
