import ArgumentParser
import DeskWeb
import Glibc
import Logging
import UnixSignals

/// deskd-web: deskd's web front. It serves the browser gateway and the metrics endpoint on the
/// sockets deskd binds and passes it, as an unprivileged account, and asks deskd about every
/// link; deskd (root) parses no HTTP, TLS or WebSocket. Started by deskd-web.service, or by
/// deskd itself outside systemd.
@main
struct DeskdWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deskd-web",
        abstract: "deskd's web front: the browser gateway and the metrics endpoint, served as an unprivileged user.",
        discussion: "It connects to deskd's front socket, which only web.user (deskd.toml) may open, and serves what deskd hands it there. Run it as that account: deskd-web.service does, or deskd starts it itself (deskd --web-front spawn)."
    )

    @Option(help: "deskd's front socket.")
    var socket = "/run/deskd/web.sock"

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard getuid() != 0, geteuid() != 0 else {
            throw ValidationError("deskd-web must not run as root: run it as web.user (deskd-web), as deskd-web.service and deskd itself do.")
        }
    }

    func run() async throws {
        // Every browser's connection is a descriptor (web.max_connections goes to 16384): the soft
        // limit, 1024 under systemd, is raised to the hard one, as any network server's is.
        var files = rlimit()
        if getrlimit(RLIMIT_NOFILE_ID, &files) == 0, files.rlim_cur < files.rlim_max {
            files.rlim_cur = files.rlim_max
            _ = setrlimit(RLIMIT_NOFILE_ID, &files)
        }
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let front = WebFront(socketPath: socket, logger: Logger(label: "deskd-web"))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await front.run() }
            group.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) { return }
            }
            // Whichever ends first (a signal) ends the other: every connection is closed.
            await group.next()
            group.cancelAll()
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// RLIMIT_NOFILE as getrlimit's resource type (Glibc's enum imports as a struct).
private let RLIMIT_NOFILE_ID = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
