import DeskCore
import DeskHost
import DeskLinux
import Glibc
import Logging
import ServiceLifecycle

/// Runs deskd-web as deskd's child where no service manager runs it (`deskd --web-front spawn`,
/// the default outside deskd.service): started as `[web] user`, started again when it exits
/// (after 1 s, doubling to 30 s while it keeps failing), and stopped when deskd stops.
/// Under systemd, deskd-web.service runs it instead, with the unit's sandbox.
struct FrontLauncher: Service {
    let server: FrontServer
    let logLevel: String
    let logger: Logger

    func run() async throws {
        guard let program = WebFrontProcess.locate() else {
            logger.error("deskd-web is not beside deskd (nor in ../libexec/deskd): nothing serves the gateway or the metrics; reinstall deskd")
            return
        }
        guard case .success(let account) = server.account() else { return }   // FrontServer says why
        var delay = Duration.seconds(1)
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let front: WebFrontProcess
            do {
                front = try WebFrontProcess.spawn(program: program, socket: server.socketPath, account: account, logLevel: logLevel,
                                                  output: STDERR_FILENO)
            } catch {
                logger.error("deskd-web could not be started", metadata: ["error": "\(error)"])
                let wait = delay
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
                delay = min(delay * 2, .seconds(30))
                continue
            }
            let started = ContinuousClock.now
            await withTaskCancellationHandler {
                await withGracefulShutdownHandler {
                    // Waits as long as deskd-web runs: a thread of its own, for its whole life.
                    _ = await onDedicatedThread { front.waitForExit() }
                } onGracefulShutdown: {
                    Self.stop(front)
                }
            } onCancel: {
                Self.stop(front)
            }
            if Task.isShuttingDownGracefully || Task.isCancelled {
                front.closeHandle()
                return
            }
            front.closeHandle()
            delay = ContinuousClock.now - started > .seconds(60) ? .seconds(1) : min(delay * 2, .seconds(30))
            logger.warning("deskd-web exited; starting it again", metadata: ["front.pid": "\(front.pid)", "retry.after": "\(delay)"])
            let wait = delay
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
        }
    }

    /// TERM now; a front that has not gone within 2 s is killed (through its pidfd, which stays
    /// open until it has been reaped, so no other process is ever signalled).
    private static func stop(_ front: WebFrontProcess) {
        front.signal(SIGTERM)
        // From a shutdown or cancellation handler, which must not wait: the SIGKILL follows
        // on a task of its own (the pidfd keeps it to this process, reaped or not).
        Task {
            try? await Task.sleep(for: .seconds(2))
            front.signal(SIGKILL)
        }
    }
}
