import DeskCore
import DeskHost
import DeskLinux
import DeskSessionProtocol
import FoundationEssentials
import Glibc
import Logging

/// What a session does when its processes end on their own: Xvnc's exit ends it; the desktop's
/// exit ends it too (`sessions.desktop_exit_ends_session`), unless the desktop's script left
/// processes of its own holding the display, which then keep it.
extension ManagedSession {
    /// Watches the display server and the desktop. The exit monitor calls back on a thread of its own; what
    /// the session does about it runs in the service's task group (SessionTasks).
    func watchExits() {
        let tasks = environment.tasks
        host.onExit(of: record.session.pid) { [weak self] in
            tasks.spawn { [weak self] in await self?.processExited(role: ProcessRole.server.rawValue) }
        }
        // A desktop whose script already left its clients running: its clients are what keeps
        // the session, and the monitor looks at them each second (checkLeftClients).
        if record.desktopLeftClients == true { return }
        guard let desktop = record.session.desktopPid else { return }
        // The desktop ended between its first moments and this watch, and its pid went to a
        // newer process: watching that one would keep the session past its desktop.
        if let ticks = desktopStartTicks, host.identity(of: desktop)?.startTicks != ticks {
            tasks.spawn { await self.processExited(role: "desktop") }
            return
        }
        watchDesktop(desktop)
    }

    /// Watched even when its exit does not end the session: the monitor also reaps it.
    func watchDesktop(_ pid: Int32) {
        let tasks = environment.tasks
        host.onExit(of: pid) { [weak self] in
            tasks.spawn { [weak self] in await self?.processExited(role: "desktop") }
        }
    }

    func processExited(role: String) async {
        guard isRunning else { return }
        if role == "desktop" && !environment.configuration.value.desktopExitEndsSession {
            logger.info("desktop exited; the session stays (desktop_exit_ends_session is off)", metadata: record.session.logMetadata)
            return
        }
        if role == "desktop", await keepForLeftClients() { return }
        logger.info("session process exited; ending the session", metadata: record.session.logMetadata.merging(["process.role": "\(role)"]) { $1 })
        await end(.exited(role: role))
    }

    // MARK: A desktop that left its clients running

    /// The desktop's script has ended. If it ended at once (as `gnome-session &` as a last line
    /// does: within the start's own deadline, `sessions.start_timeout`, of the start) and
    /// processes of the session hold its display, the session stays with them; true if so. A
    /// desktop that ran for a while and ended is a logout, whatever it left (Debian's
    /// Xtigervnc-session leaves `vncconfig -iconic` behind): its session ends, as before.
    ///
    /// Only a script that exited 0 leaves its processes in charge. One that was killed or failed
    /// (gnome-session aborting where GNOME has no X11 session, after its first X connection made
    /// the start ready) leaves a black screen behind, whatever still holds the display: its
    /// session ends, and the desktop's log says how the script ended.
    func keepForLeftClients() async -> Bool {
        if record.desktopLeftClients != true {
            let window = environment.configuration.value.startTimeout
            guard Date().timeIntervalSince(record.session.startedAt) < Double(window.components.seconds) else { return false }
            let archive = environment.archive
            // No record yet (a host too loaded for deskd-session to write it within a second)
            // is not a failure: the processes left decide, as they did before. (A wait of up to a
            // second: a thread of its own.)
            if let logDirectory = record.logDirectory,
               let end = await onDedicatedThread({ Self.desktopEnd(in: logDirectory, archive: archive) }), end != .exited(status: 0) {
                let how = end.description
                logger.info("the desktop's script failed; the processes it left do not keep the session",
                            metadata: record.session.logMetadata.merging(["process.exit": "\(how)"]) { $1 })
                archive.note("the desktop's script \(how) during its first moments; what it left running does not keep a session, so deskd ends it.", to: .desktop, in: logDirectory)
                return false
            }
        }
        guard let clients = await sessionClients(), !clients.isEmpty, isRunning else { return false }
        desktopLeftRunning(logDirectory: record.logDirectory, processes: clients.count)
        persist()
        return true
    }

    /// How the desktop's script ended, as deskd-session records it once it has reaped the
    /// script: deskd hears of the exit first (its pidfd), so the record is waited for a moment.
    private static func desktopEnd(in logDirectory: String, archive: SessionLogArchive) -> ProcessEnd? {
        for _ in 0..<40 {
            if let text = archive.exits(in: logDirectory)[.desktop] { return ProcessEnd(text) }
            usleep(25_000)
        }
        return nil
    }

    /// Where the desktop's programs connect to its display server.
    var clientSocket: DisplayClientSocket {
        record.session.server.clientSocket(display: display, uid: record.session.uid, directory: directory.path)
    }

    /// The session's processes that hold its display now (see XClients); nil if unknown.
    func sessionClients() async -> [pid_t]? {
        let host = self.host, server = record.session.pid, socket = clientSocket
        let cgroup = record.cgroup.map(SessionCGroup.init(path:))
        return await onBlockingPool { host.desktopClients(server: server, socket: socket, cgroup: cgroup, desktop: nil) }
    }

    /// The monitor's look, each second, at a session kept for the clients its desktop left: it
    /// ends once none of them holds the display. A look each second rather than a watch per
    /// client: the clients are the user's to multiply, and each watch would cost deskd a
    /// descriptor.
    func checkLeftClients() async {
        guard isRunning, record.desktopLeftClients == true else { return }
        guard let clients = await sessionClients() else { return }
        guard clients.isEmpty else {
            emptyClientCensuses = 0
            return
        }
        emptyClientCensuses += 1
        guard emptyClientCensuses >= 2, isRunning else { return }
        logger.info("the desktop's last X client is gone; ending the session", metadata: record.session.logMetadata)
        await end(.exited(role: "desktop"))
    }

    /// The desktop's script ended and left processes of its own running: the session now lives
    /// as long as they hold its display. Said once, in the desktop's log and deskd's.
    func desktopLeftRunning(logDirectory: String?, processes: Int) {
        guard record.desktopLeftClients != true else { return }
        record.desktopLeftClients = true
        logger.info("the desktop's script exited leaving processes running; the session stays while they hold the display",
                    metadata: record.session.logMetadata.merging(["session.processes": "\(processes)"]) { $1 })
        if let logDirectory {
            environment.archive.note("the desktop's script exited and left \(processes) process(es) running; the session stays for as long as they use the display.", to: .desktop, in: logDirectory)
        }
    }

    /// The desktop of a session whose desktop's exit does not end it, started once the start
    /// has answered (SessionTasks runs this).
    func startDesktop() async {
        guard isRunning, let login else { return }
        let deadline = ContinuousClock.now + .seconds(10)
        // deskd-session's answer: up to the deadline.
        switch await onDedicatedThread({ login.startDesktop(until: deadline) }) {
        case .success(let pid):
            guard !isEnding else { return }
            record.session.desktopPid = pid
            persist()
            watchDesktop(pid)
        case .failure(let error):
            logger.error("could not launch the desktop; ending the session", metadata: record.session.logMetadata.merging(["error": "\(error)"]) { $1 })
            await finish(.startFailed("desktop spawn failed"))
        }
    }
}
