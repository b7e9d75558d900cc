import DeskCore
import DeskHost
import DeskLinux
import DeskSessionProtocol
import FoundationEssentials
import Glibc
import Logging

/// Carries out a `LaunchPlan` on the host: takes a display, then on the session's actor makes
/// its directory, log directory and cgroup, opens its login through deskd-session (which starts
/// Xvnc), waits for a real RFB handshake and the desktop's first X connection, links the
/// display and saves the record. Each step notes what it put on the host (`SessionFootprint`)
/// before it acts, so a failure unwinds exactly that (`ManagedSession.launch`).
struct SessionBringUp: Sendable {
    let plan: LaunchPlan
    let environment: SessionEnvironment

    private var host: any HostSystem { environment.host }
    private var configuration: DaemonConfiguration { plan.configuration }
    /// Xvnc, or the compositor with wayvnc that the desktop's template names.
    private var server: any DisplayServer { plan.server }

    /// How a start on one display went wrong.
    enum Failure: Error {
        /// Another X server took the display under the start: try the next one.
        case displayTaken
        /// For good, at `step` (the end reason the session's logs and metrics keep).
        case failed(DeskError, step: String)
        /// A kill came while it started.
        case killed

        var step: String {
            switch self {
            case .displayTaken: "server exited during start"
            case .failed(_, let step): step
            case .killed: "killed"
            }
        }
    }

    // MARK: A display

    /// The session started on the requested display, or the lowest usable one: another X
    /// server can win a display between deskd's look and Xvnc's own lock, and then the next
    /// is tried.
    func start(timings: StartTimings) async throws(DeskError) -> Session {
        do { try host.prepareXSocketDirectory() } catch {
            throw DeskError(.internalError, "cannot prepare \(XSocketDirectory.path): \(error).", cause: .init(error))
        }
        var tried: Set<Display> = []
        while true {
            let display = try await chooseDisplay(skipping: tried)
            let session = ManagedSession(record: newRecord(on: display), lifecycle: .starting, environment: environment)
            guard try await environment.registry.claim(display, for: session, limits: configuration.limits) else {
                // A start that looked at the same moment claimed it first.
                if plan.display != nil {
                    throw DeskError(.displayBusy, "display \(display) is in use: \(DisplayOccupancy.heldByDeskd.reason); pick another or leave out --display.")
                }
                tried.insert(display)
                continue
            }
            do {
                return try await session.launch(self, timings: timings)
            } catch {
                switch error {
                case .failed(let failure, _): throw failure
                case .killed: throw ManagedSession.killedWhileStarting(display)
                case .displayTaken: tried.insert(display)
                }
                environment.logger.info("display taken by another X server; trying the next", metadata: ["session.display": "\(display)"])
                if plan.display != nil || tried.count >= 8 {
                    throw DeskError(.displayBusy, "display \(display) was taken by another X server while starting; try again.")
                }
            }
        }
    }

    /// The requested display, or the lowest usable one. Lock files are anyone's to plant, so
    /// the look at the host (listeners, then lock files from the lowest display up) runs off
    /// every actor; the registry's claim afterwards settles a race with another start.
    private func chooseDisplay(skipping tried: Set<Display>) async throws(DeskError) -> Display {
        let held = await environment.registry.heldDisplays
        let range = configuration.displayRange, portBase = configuration.vncExposure.rfbPortBase, requested = plan.display
        let host = self.host
        // Lock files are anyone's to plant, as slow to read as they made them.
        let choice = await onDedicatedThread { () -> Result<(Display, [(Display, String)]), DeskError> in
            let occupancy = host.displayOccupancy(in: range, rfbPortBase: portBase)
            var planted: [(Display, String)] = []
            return Result { () throws(DeskError) in
                let display = try DisplayAllocator(range: range).choose(requested: requested, skipping: tried) { display in
                    if held.contains(display) { return .heldByDeskd }
                    let found = occupancy(display)
                    if case .unusableLock(let what) = found { planted.append((display, what)) }
                    return found
                }
                // A stale lock (a dead server's) is cleared here too, for the same reason.
                host.reclaimStaleLock(display)
                return (display, planted)
            }
        }
        let (display, planted) = try choice.get()
        for (skipped, what) in planted {
            environment.logger.notice("display skipped: its lock file is not an X server's", metadata: ["session.display": "\(skipped)", "lock": "\(what)"])
        }
        return display
    }

    private func newRecord(on display: Display) -> SessionRecord {
        let id = Self.newSessionID()
        let exposure = configuration.vncExposure, directories = configuration.sessionDirectories
        let advertised: RFBEndpoint = exposure.usesTCP
            ? .tcp(port: display.rfbPort(base: exposure.portBase)) : .unixSocket(path: directories.rfbSocket(for: display))
        var session = Session(
            id: id, user: plan.account.name, uid: plan.account.uid, gid: plan.account.gid, display: display, endpoint: advertised,
            pid: 0, pidStartTicks: 0, executable: configuration.xvncPath, state: .starting, startedAt: Date(),
            desktop: plan.template.name, geometry: plan.geometry, depth: plan.depth
        )
        session.displayServer = type(of: server).kind
        return SessionRecord(session: session)
    }

    static func newSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    // MARK: On the display

    /// The steps on a claimed display, on the session's actor; returns the session's password
    /// (nil for a server whose viewers need none).
    /// One deadline covers them all (sessions.start_timeout): deskd-session's answer, Xvnc's
    /// handshake and the desktop's first X connection come within it, or the start fails.
    func run(on session: isolated ManagedSession, timings: StartTimings) async throws(Failure) -> String? {
        var timings = timings
        let account = plan.account, display = session.display, id = session.id
        let deadline = ContinuousClock.now + configuration.startTimeout
        let directory = session.directory
        let xstartup: String
        do {
            xstartup = XstartupTemplate.sessionScript(try plan.template.render([
                "user": account.name, "home": account.home, "display": display.description,
                "geometry": plan.geometry.description, "desktop": plan.template.name, "session_dir": directory.path,
            ]), preferringUserXstartup: plan.userXstartup)
        } catch { throw .failed(error, step: "template failed") }
        guard let helperPath = host.sessionHelperPath else {
            throw .failed(DeskError(.internalError, "deskd-session is not installed beside deskd; reinstall deskd (make install or the package)."), step: "no deskd-session")
        }
        // Only what the server uses: a VNC password where viewers log in with one, an X cookie
        // for an X server.
        let kind = type(of: server)
        let password = kind.viewerAccess == .password ? SessionPassword.generate() : nil
        let tls = try tlsMaterial()
        let host = self.host, archive = environment.archive

        session.footprint.insert(.directory)
        do {
            try host.createSessionDirectory(directory, owner: account.uid, group: account.gid, contents: .init(
                password: password.map { VNCPasswordFile.encode(password: $0) },
                xauthority: kind.ownsXDisplay ? XAuthority.generate().fileContents(for: display) : nil,
                xstartup: xstartup, tls: tls
            ))
        } catch {
            throw .failed(DeskError(.internalError, "could not prepare the session directory \(directory.path): \(error).", cause: .init(error)), step: "directory failed")
        }
        guard let logDirectory = archive.newPath(uid: account.uid, id: id) else {
            let failure = OSError("create the log directory", path: archive.directory)
            throw .failed(DeskError(.internalError, "cannot create the session's log directory under \(archive.directory): \(failure.reason).", cause: .init(failure)), step: "log directory failed")
        }
        session.record.logDirectory = logDirectory
        session.footprint.insert(.cgroup)
        do {
            session.record.cgroup = try host.createCGroup(for: id, tasks: configuration.sessionTasksMax, memoryBytes: configuration.sessionMemoryMax)?.path
        } catch {
            throw .failed(DeskError(.internalError, "could not create the session's cgroup: \(error).", cause: .init(error)), step: "cgroup failed")
        }
        archive.save(SessionSummary(session.record.session), in: logDirectory)
        timings.mark("prepared")

        let login = try startLogin(on: session, helper: helperPath, logDirectory: logDirectory)
        // deskd-session's answer (PAM, then the server's spawn): up to the start's deadline.
        let started = await onDedicatedThread { login.awaitStart(until: deadline) }
        if case .server(let pid) = started { session.record.session.pid = pid }
        try session.stopIfKilled()
        switch started {
        case .server:
            break
        case .refused(let refusal):
            throw .failed(DeskError(.loginRefused, "\(account.name) may not log in, so no desktop was started: \(refusal.sentence). An admin can check the account with: chage -l \(account.name).",
                                    cause: .pam(code: refusal.status, text: refusal.statusName)), step: "login refused")
        case .failed(let sentence):
            throw .failed(DeskError(.internalError, "the desktop's login session could not be opened: \(sentence)."), step: "deskd-session failed")
        case .taken(let sentence):
            // Another user got in the way of the display, not the desktop: the next one is tried.
            environment.logger.notice("display taken before its start", metadata: ["session.display": "\(display)", "reason": "\(sentence)"])
            throw .displayTaken
        }
        timings.mark("spawned")
        try await awaitHandshake(on: session, logDirectory: logDirectory, deadline: deadline)
        timings.mark("ready")
        let identity = host.identity(of: session.record.session.pid)
        session.record.session.pidStartTicks = identity?.startTicks ?? 0
        session.record.session.executable = identity?.executable ?? configuration.xvncPath
        if configuration.desktopExitEndsSession {
            try await bringUpDesktop(on: session, login: login, logDirectory: logDirectory, until: deadline)
            timings.mark("desktop")
        }
        session.footprint.insert(.published)
        do { try host.publish(display, sessionID: id, in: configuration.sessionDirectories) } catch {
            throw .failed(DeskError(.internalError, "could not link \(configuration.sessionDirectories.displays)/\(display.number) to the session: \(error).", cause: .init(error)), step: "display link failed")
        }
        session.lifecycle = .ready
        session.persist()
        session.watchExits()
        timings.mark("saved")
        environment.logger.debug("session start timings", metadata: ["session.display": "\(display)", "timings.ms": "\(timings)"])
        return password
    }

    /// deskd-session, given the session's spec: it opens the PAM login and starts Xvnc in the
    /// session's cgroup, as the user.
    private func startLogin(on session: isolated ManagedSession, helper: String, logDirectory: String) throws(Failure) -> any LoginProcess {
        let account = plan.account, display = session.display, directory = session.directory
        let server = self.server, needs = displayServerNeeds(display: display, directory: directory)
        // What reaches the display server (for Xvnc, the display and its cookie) is the server's to say.
        let environmentVariables = [
            "HOME": account.home, "USER": account.name, "LOGNAME": account.name, "SHELL": account.shell,
            "PATH": configuration.sessionPath, ProcessSweep.markerKey: session.id,
        ].merging(server.clientEnvironment(needs)) { $1 }
        // The journal is readable by group adm, not only by the desktop's owner: session output
        // goes there only if the admin asked for it (sessions.journal_output).
        let journalCopy = environment.journal && configuration.journalOutput
        session.footprint.insert(.processes)
        let login: any LoginProcess
        do {
            login = try host.startLogin(.init(
                account: account, display: display, sessionID: session.id, logDirectory: logDirectory,
                logLimit: configuration.sessionLogBytes, journal: journalCopy, cgroup: session.record.cgroup.map(SessionCGroup.init(path:)),
                server: server.commandLine(needs), serverUmask: 0o077, desktop: server.desktopCommand(xstartup: directory.xstartup),
                sessionType: server.sessionType, xSocketDirectory: directory.xSocketDirectory, environment: environmentVariables
            ), helper: helper, stderr: journalCopy ? STDERR_FILENO : -1)
        } catch {
            throw .failed(DeskError(.internalError, "could not start deskd-session: \(error).", cause: .init(error)), step: "spawn failed")
        }
        session.login = login
        session.record.helper = login.pid
        session.record.helperStartTicks = host.identity(of: login.pid)?.startTicks
        host.onExit(of: login.pid) {}   // reaped when it ends, whenever that is
        return login
    }

    /// What the session's display server is given: the session's own cookie, password file and
    /// socket, the plan's size and depth, and what the configuration adds.
    private func displayServerNeeds(display: Display, directory: SessionDirectory) -> DisplayServerNeeds {
        let exposure = configuration.vncExposure
        var needs = DisplayServerNeeds(
            display: display, directory: directory.path, xauthority: directory.xauthority, passwordFile: directory.passwordFile, rfbSocket: directory.rfbSocket,
            geometry: plan.geometry, depth: plan.depth, title: "\(plan.account.name)'s desktop (\(display))", exposure: exposure,
            tlsFiles: exposure.tlsCertificate == nil ? nil : .init(certificate: directory.tlsCertificate, key: directory.tlsKey),
            policy: configuration.displayServerPolicy
        )
        needs.privateXSockets = true
        return needs
    }

    /// Ready means a real RFB handshake with this session's Xvnc, and no one else.
    private func awaitHandshake(on session: isolated ManagedSession, logDirectory: String, deadline: ContinuousClock.Instant) async throws(Failure) {
        let host = self.host, xvnc = session.record.session.pid, endpoint = session.endpoint, display = session.display
        let address = configuration.vncExposure.reachableAddress
        // Greets the server until it answers: up to the start's deadline.
        let readiness = await onDedicatedThread { host.awaitRFB(endpoint, host: address, xvnc: xvnc, until: deadline) }
        try session.stopIfKilled()
        switch readiness {
        case .answered:
            return
        case .impostor(let what):
            environment.logger.warning("session endpoint held by another process; start refused", metadata: session.record.session.logMetadata.merging(["endpoint.holder": "\(what)"]) { $1 })
            throw .failed(DeskError(.displayBusy, "the desktop on \(display) was not started: \(what); deskd handed out no password. Ask an admin to find that process, or start on another display."), step: "endpoint held by another process")
        case .exited:
            let lines = await onBlockingPool { host.tail(of: logDirectory + "/\(ProcessRole.server.rawValue).log", lines: 8) }
            if server.displayWasTaken(log: lines) {
                throw .displayTaken
            }
            throw .failed(DeskError(.xvncExited, "\(server.name) exited before it answered on \(display); its last log lines: \(lines.suffix(4).joined(separator: " | "))"), step: "server exited during start")
        case .timedOut:
            throw .failed(DeskError(.startTimedOut, "\(server.name) on \(display) did not answer an RFB handshake within \(configuration.startTimeout); see the host's load and try again."), step: "start timed out")
        }
    }

    /// The admin's certificate and key, read as root from the configured (root-controlled) paths.
    private func tlsMaterial() throws(Failure) -> (certificate: [UInt8], key: [UInt8])? {
        let exposure = configuration.vncExposure
        guard let certificatePath = exposure.tlsCertificate, let keyPath = exposure.tlsKey else { return nil }
        guard let certificate = host.readRootFile(certificatePath, limit: 1 << 20), let key = host.readRootFile(keyPath, limit: 1 << 20) else {
            throw .failed(DeskError(.internalError, "cannot read the TLS certificate \(certificatePath) or key \(keyPath) (network.tls_certificate, network.tls_key); check that both exist."), step: "tls files unreadable")
        }
        return (certificate, key)
    }
}

// MARK: The desktop

/// The last step of a start whose desktop's exit ends the session: the desktop is started once
/// Xvnc has answered, and `start` answers once it has reached its display: once a process of
/// the session holds an X connection (XClients), whichever process that is (the xstartup
/// itself, a child of its shell, dbus-launch's). The bound is the start's deadline
/// (sessions.start_timeout), not a wait: a working desktop ends it within milliseconds.
///
/// A desktop that ends first fails the start with its exit status and last log lines, with one
/// exception, the shape the VNC guides teach (`gnome-session &` as the last line): a script
/// that exits 0 at once leaving processes of its own, which keep the session for as long as
/// they hold the display (ManagedSession+Exits.swift).
extension SessionBringUp {
    private func bringUpDesktop(on session: isolated ManagedSession, login: any LoginProcess, logDirectory: String,
                                until deadline: ContinuousClock.Instant) async throws(Failure) {
        let host = environment.host, xvnc = session.record.session.pid, display = session.display, template = plan.template.name
        // deskd-session's answer: up to the start's deadline.
        let launched = await onDedicatedThread { login.startDesktop(until: deadline) }
        let desktop: pid_t
        switch launched {
        case .success(let pid): desktop = pid
        case .failure(let error):
            if host.identity(of: xvnc) == nil {
                try await failFirstMoments(on: session, role: .server, how: "ended", logDirectory: logDirectory)
            }
            throw .failed(DeskError(.internalError, "the desktop on \(display) could not be launched (\(error)); see deskd's log."), step: "desktop spawn failed")
        }
        session.record.session.desktopPid = desktop
        // Who the desktop is, so a watch begun later is not put on a newer process with its pid.
        session.desktopStartTicks = host.identity(of: desktop)?.startTicks
        let cgroup = session.record.cgroup.map(SessionCGroup.init(path:)), socket = session.clientSocket
        let reached: @Sendable () -> Bool = {
            host.desktopClients(server: xvnc, socket: socket, cgroup: cgroup, desktop: desktop)?.isEmpty == false
        }
        // Watches the desktop reach its display: up to the start's deadline.
        var outcome = await onDedicatedThread { login.awaitDesktop(until: deadline, settled: reached) }
        try session.stopIfKilled()
        if case .ended(role: .desktop, how: .exited(status: 0)) = outcome {
            let record = session.record.session
            // Without cgroup v2, the user's processes' environ files: a user can make them slow.
            let left = await onDedicatedThread { host.processes(of: record, cgroup: cgroup).filter { $0 != xvnc && $0 != desktop } }
            if !left.isEmpty {
                session.desktopLeftRunning(logDirectory: logDirectory, processes: left.count)
                // The same watch, up to the same deadline.
                outcome = await onDedicatedThread { login.awaitDesktop(until: deadline, settled: reached) }
                try session.stopIfKilled()
                if case .stillStarting = outcome {
                    throw .failed(DeskError(.desktopExited, "the desktop \"\(template)\" exited at once on \(display), and the \(left.count) process(es) it left running did not open the display within \(plan.configuration.startTimeout), so deskd ended the session. Run the desktop in the foreground as the last line of the script (exec startxfce4, not startxfce4 &)."), step: "desktop exited at once")
                }
            }
        }
        switch outcome {
        case .settled:
            return
        case .stillStarting:
            // Running, but not on its display yet: the start stands, as the desktop may be slow
            // (a login script waiting on the network); its log says why if it never gets there.
            environment.logger.warning("the desktop has not opened its display by the start deadline; answering anyway",
                                       metadata: session.record.session.logMetadata)
            environment.archive.note("the desktop had not opened its display \(plan.configuration.startTimeout) after the start; deskd answered the start anyway.", to: .desktop, in: logDirectory)
        case .ended(let role, let how):
            try await failFirstMoments(on: session, role: role, how: how.description, logDirectory: logDirectory)
        }
    }

    /// Fails a start whose desktop or Xvnc ended before the desktop reached its display, and says so.
    private func failFirstMoments(on session: isolated ManagedSession, role: ProcessRole, how: String, logDirectory: String) async throws(Failure) -> Never {
        let log = role.rawValue + ".log"
        let host = environment.host, display = session.display, template = plan.template.name
        let lines = await onBlockingPool { host.tail(of: logDirectory + "/" + log, lines: 8) }
        environment.logger.warning("session process exited before the desktop reached its display; start failed",
                                   metadata: session.record.session.logMetadata.merging(["process.role": "\(role)", "process.exit": "\(how)"]) { $1 })
        let tail = lines.isEmpty ? "its log is empty" : "its last log lines: " + lines.suffix(4).joined(separator: " | ")
        if role == .server {
            throw .failed(DeskError(.xvncExited, "\(server.name) on \(display) \(how) just after it answered, so deskd ended the session; \(tail)"), step: "server exited at once")
        }
        // With sessions.user_xstartup on, the user's own ~/.vnc/xstartup may have run instead.
        let what = plan.userXstartup ? "the desktop \"\(template)\" (or the user's ~/.vnc/xstartup or ~/.config/tigervnc/xstartup, which runs instead where it exists)" : "the desktop \"\(template)\""
        throw .failed(DeskError(.desktopExited, "\(what) \(how) before it opened its display on \(display), so deskd ended the session; \(tail). Fix the desktop, or start another (deskctl desktops lists them)."), step: "\(role.rawValue) exited at once")
    }
}
