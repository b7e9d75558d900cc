import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers

/// One desktop session and everything that is its own: its directory, cgroup, login process,
/// Xvnc and desktop, its record, and where it is in its life.
///
///     starting ──▶ ready ⇄ unresponsive ──▶ stopping ──▶ ended
///         └──────────────────────────────────────▲
///
/// An actor per session, so one session's slow teardown (a user's tree of 400,000 files) or
/// stuck probe holds up no one else's, and everything that ends a session (kill, reap, an exit,
/// a failed start) goes through one teardown, run once.
actor ManagedSession {
    enum Lifecycle: String, Sendable {
        case starting, ready, unresponsive, stopping, ended
    }

    /// How a start went wrong: the display was taken under it (try another), or for good.
    enum LaunchFailure: Error {
        case displayTaken
        case failed(DeskError)
    }

    /// Everything a start has decided before it touches the host.
    struct LaunchPlan: Sendable {
        var account: UserAccount
        var template: XstartupTemplate
        var geometry: Geometry
        var depth: Int
        var userXstartup: Bool
        var configuration: DaemonConfiguration
    }

    nonisolated let id: String
    nonisolated let user: String
    nonisolated let uid: UInt32
    nonisolated let display: Display

    private(set) var record: SessionRecord
    private(set) var lifecycle: Lifecycle
    private let environment: SessionEnvironment
    /// Held across every read-modify-write of the session's password file, which runs off the
    /// actor: a `passwd` and a view-only login's first use must not interleave and put an old
    /// password back.
    private let passwordFile = NIOLock()
    /// The last probe got no complete handshake.
    private var failedProbe = false
    private var teardown: Task<Void, Never>?
    /// A kill that came while the session was starting: the start ends it, then lets them go.
    private var stopWhileStarting: EndCause?
    private var startWaiters: [CheckedContinuation<Void, Never>] = []
    /// A start owns the session from its claim to its reply: its own code decides what becomes
    /// of it, and a kill meanwhile waits for that (a session made for a start begins so).
    private var launching: Bool
    /// The start has put something on the host (a directory, a cgroup, a process) to take away.
    private var touchedHost = false
    private var login: (any LoginProcess)?
    /// The desktop's start time in ticks, read when deskd-session named its pid.
    private var desktopStartTicks: UInt64?
    /// sessions.user_xstartup applied to this start: ~/.vnc/xstartup may run instead of the template.
    private var honoursUserXstartup = false

    private var host: any HostSystem { environment.host }
    private var logger: Logger { environment.logger }

    init(record: SessionRecord, lifecycle: Lifecycle, environment: SessionEnvironment) {
        self.launching = lifecycle == .starting
        self.id = record.session.id
        self.user = record.session.user
        self.uid = record.session.uid
        self.display = record.session.display
        self.record = record
        self.lifecycle = lifecycle
        self.environment = environment
    }

    /// The session as `list` shows it: its state follows the lifecycle.
    var session: Session {
        var session = record.session
        session.state = switch lifecycle {
        case .starting: .starting
        case .ready: .ready
        case .unresponsive: .unresponsive
        case .stopping: .stopping
        case .ended: .exited
        }
        return session
    }

    var isEnding: Bool { lifecycle == .stopping || lifecycle == .ended }
    /// Started and not being ended: Xvnc is there to count viewers of, probe and log in to.
    var isRunning: Bool { lifecycle == .ready || lifecycle == .unresponsive }

    /// What the viewer census asks of a running session; nil for one starting or ending.
    var censusSubject: ViewerCensus.Subject? {
        isRunning ? ViewerCensus.Subject(sessionID: id, xvnc: record.session.pid, endpoint: endpoint) : nil
    }

    /// The session's directory: by id, or where an older deskd put it.
    var directory: SessionDirectory {
        record.directory.map(SessionDirectory.init(path:))
            ?? SessionDirectory(path: environment.configuration.value.sessionDirectories.displays + "/\(display.number)")
    }

    /// Where Xvnc serves RFB, for deskd's own connections (its directory, never the display's link).
    var endpoint: RFBEndpoint {
        record.session.rfbPort.map(RFBEndpoint.tcp(port:)) ?? .unixSocket(path: directory.rfbSocket)
    }

    // MARK: Start

    /// Prepares the session's files and cgroup, opens its login through deskd-session, and
    /// waits for a real RFB greeting from its own Xvnc. Ends the session on any failure.
    /// Returns the session with its password, which is in this reply and nowhere else.
    func launch(_ plan: LaunchPlan, timings: StartTimings) async throws(LaunchFailure) -> Session {
        defer {
            launching = false
            for waiter in startWaiters { waiter.resume() }
            startWaiters = []
        }
        let password: String
        do {
            password = try await bringUp(plan, timings: timings)
        } catch {
            // Every failure lets go of the display: through the teardown once the host holds
            // anything of the session's, else at once (nothing to end, nothing to record).
            if teardown == nil {
                if touchedHost {
                    await finish(.startFailed("start failed"))
                } else {
                    lifecycle = .ended
                    await environment.registry.release(self)
                }
            }
            // A kill that came meanwhile stands, even if this display was merely taken.
            if stopWhileStarting != nil { throw .failed(killedWhileStarting) }
            throw error
        }
        if let cause = stopWhileStarting {
            await finish(cause)
            throw .failed(killedWhileStarting)
        }
        var reply = session
        reply.password = password
        // A desktop whose exit does not end the session cannot fail its start: it starts the
        // moment this reply is on its way, since the X server already answers.
        if !plan.configuration.desktopExitEndsSession { Task { await self.startDesktop() } }
        return reply
    }

    private var killedWhileStarting: DeskError {
        DeskError(.noSuchSession, "the desktop on \(display) was killed while it started; start another if you still need one.")
    }

    /// Ends a start that a kill came for while it waited on the host.
    private func stopIfKilled() async throws(LaunchFailure) {
        guard let cause = stopWhileStarting else { return }
        await finish(cause)
        throw .failed(killedWhileStarting)
    }

    private func bringUp(_ plan: LaunchPlan, timings: StartTimings) async throws(LaunchFailure) -> String {
        var timings = timings
        let configuration = plan.configuration, account = plan.account
        // One deadline for the whole start: deskd-session's answer, Xvnc's handshake and the
        // desktop's first X connection all come within it, or the start fails.
        let startTimeout = configuration.startTimeout
        let deadline = ContinuousClock.now + startTimeout
        let directory = configuration.sessionDirectories.directory(for: id)
        let xstartup: String
        do {
            xstartup = XstartupTemplate.sessionScript(try plan.template.render([
                "user": account.name, "home": account.home, "display": display.description,
                "geometry": plan.geometry.description, "desktop": plan.template.name, "session_dir": directory.path,
            ]), preferringUserXstartup: plan.userXstartup)
        } catch { throw .failed(error) }
        guard let helperPath = host.sessionHelperPath else {
            throw .failed(DeskError(.internalError, "deskd-session is not installed beside deskd; reinstall deskd (make install or the package)."))
        }
        let password = SessionPassword.generate()
        let tls = try tlsMaterial(configuration.vncExposure)
        let host = self.host, archive = environment.archive
        touchedHost = true
        do {
            try host.createSessionDirectory(directory, owner: account.uid, group: account.gid, contents: .init(
                password: VNCPasswordFile.encode(password: password),
                xauthority: XAuthority.generate().fileContents(for: display),
                xstartup: xstartup, tls: tls
            ))
        } catch {
            throw .failed(DeskError(.internalError, "could not prepare the session directory \(directory.path): \(error)."))
        }
        guard let logDirectory = archive.newPath(uid: account.uid, id: id) else {
            let reason = String(cString: strerror(errno))
            await finish(.startFailed("log directory failed"))
            throw .failed(DeskError(.internalError, "cannot create the session's log directory under \(archive.directory): \(reason)."))
        }
        record.logDirectory = logDirectory
        do {
            record.cgroup = try host.createCGroup(for: id, tasks: configuration.sessionTasksMax, memoryBytes: configuration.sessionMemoryMax)?.path
        } catch {
            await finish(.startFailed("cgroup failed"))
            throw .failed(DeskError(.internalError, "could not create the session's cgroup: \(error)."))
        }
        archive.save(SessionSummary(record.session), in: logDirectory)

        let exposure = configuration.vncExposure
        let environmentVariables = [
            "HOME": account.home, "USER": account.name, "LOGNAME": account.name, "SHELL": account.shell,
            "PATH": configuration.sessionPath, "DISPLAY": display.description, "XAUTHORITY": directory.xauthority,
            ProcessSweep.markerKey: id,
        ]
        timings.mark("prepared")
        // The journal is readable by group adm, not only by the desktop's owner: session output
        // goes there only if the admin asked for it (sessions.journal_output).
        let journalCopy = environment.journal && configuration.journalOutput
        let login: any LoginProcess
        do {
            login = try host.startLogin(.init(
                account: account, display: display.description, sessionID: id, logDirectory: logDirectory,
                logLimit: configuration.sessionLogBytes, journal: journalCopy, cgroup: record.cgroup.map(SessionCGroup.init(path:)),
                xvnc: [configuration.xvncPath] + Self.xvncArguments(display: display, geometry: plan.geometry, depth: plan.depth,
                                                                   directory: directory, user: account.name, configuration: configuration),
                xvncUmask: 0o077, desktop: ["/bin/sh", directory.xstartup], environment: environmentVariables
            ), helper: helperPath, stderr: journalCopy ? STDERR_FILENO : -1)
        } catch {
            await finish(.startFailed("spawn failed"))
            throw .failed(DeskError(.internalError, "could not start deskd-session: \(error)."))
        }
        self.login = login
        record.helper = login.pid
        record.helperStartTicks = host.identity(of: login.pid)?.startTicks
        host.onExit(of: login.pid) {}   // reaped when it ends, whenever that is
        let started = await onDedicatedThread { login.awaitStart(until: deadline) }
        if case .xvnc(let pid) = started { record.session.pid = pid }
        try await stopIfKilled()
        switch started {
        case .xvnc(let pid):
            record.session.pid = pid
        case .refused(let sentence):
            await finish(.startFailed("login refused"))
            throw .failed(DeskError(.loginRefused, "\(account.name) may not log in, so no desktop was started: \(sentence). An admin can check the account with: chage -l \(account.name)."))
        case .failed(let sentence):
            await finish(.startFailed("deskd-session failed"))
            throw .failed(DeskError(.internalError, "the desktop's login session could not be opened: \(sentence)."))
        }

        // Ready means a real RFB handshake with this session's Xvnc, and no one else.
        timings.mark("spawned")
        let xvnc = record.session.pid, endpoint = self.endpoint, address = exposure.reachableAddress
        let readiness = await onDedicatedThread { host.awaitRFB(endpoint, host: address, xvnc: xvnc, until: deadline) }
        try await stopIfKilled()
        switch readiness {
        case .answered:
            break
        case .impostor(let what):
            await finish(.startFailed("endpoint held by another process"))
            logger.warning("session endpoint held by another process; start refused", metadata: record.session.logMetadata.merging(["endpoint.holder": "\(what)"]) { $1 })
            throw .failed(DeskError(.displayBusy, "the desktop on \(display) was not started: \(what); deskd handed out no password. Ask an admin to find that process, or start on another display."))
        case .exited:
            let lines = await onDedicatedThread { host.tail(of: logDirectory + "/xvnc.log", lines: 8) }
            await finish(.startFailed("xvnc exited during start"))
            if lines.contains(where: { $0.contains("already active") || $0.contains("Address already in use") || $0.contains("Cannot establish any listening sockets") }) {
                throw .displayTaken
            }
            throw .failed(DeskError(.xvncExited, "Xtigervnc exited before it answered on \(display); its last log lines: \(lines.suffix(4).joined(separator: " | "))"))
        case .timedOut:
            await finish(.startFailed("start timed out"))
            throw .failed(DeskError(.startTimedOut, "Xtigervnc on \(display) did not answer an RFB handshake within \(startTimeout); see the host's load and try again."))
        }
        timings.mark("ready")
        let identity = host.identity(of: xvnc)
        record.session.pidStartTicks = identity?.startTicks ?? 0
        record.session.executable = identity?.executable ?? configuration.xvncPath
        if configuration.desktopExitEndsSession {
            honoursUserXstartup = plan.userXstartup
            try await bringUpDesktop(login, logDirectory: logDirectory, template: plan.template.name, until: deadline)
            timings.mark("desktop")
        }
        do { try host.publish(display, sessionID: id, in: configuration.sessionDirectories) } catch {
            await finish(.startFailed("display link failed"))
            throw .failed(DeskError(.internalError, "could not link \(configuration.sessionDirectories.displays)/\(display.number) to the session: \(error)."))
        }
        lifecycle = .ready
        persist()
        watchExits()
        timings.mark("saved")
        logger.debug("session start timings", metadata: ["session.display": "\(display)", "timings.ms": "\(timings)"])
        return password
    }

    /// Starts the desktop once Xvnc has answered and waits for it to reach its display before
    /// `start` answers: ready means a process of the session holds an X connection (XClients),
    /// whichever process that is: the xstartup itself, a child of its shell, dbus-launch's. The
    /// bound is the start's deadline (sessions.start_timeout), not a wait: a working desktop
    /// ends it within milliseconds.
    ///
    /// A desktop that ends first fails the start with its exit status and last log lines, with
    /// one exception, the shape the VNC guides teach (`gnome-session &` as the last line): a
    /// script that exits 0 at once leaving processes of its own, which keep the session for as
    /// long as they hold the display (see `keepForLeftClients`).
    private func bringUpDesktop(_ login: any LoginProcess, logDirectory: String, template: String,
                                until deadline: ContinuousClock.Instant) async throws(LaunchFailure) {
        let host = self.host, xvnc = record.session.pid, display = self.display
        let launched = await onDedicatedThread { login.startDesktop(until: deadline) }
        let desktop: pid_t
        switch launched {
        case .success(let pid): desktop = pid
        case .failure(let error):
            if host.identity(of: xvnc) == nil {
                try await failFirstMoments(role: "xvnc", how: "ended", logDirectory: logDirectory, template: template)
            }
            await finish(.startFailed("desktop spawn failed"))
            throw .failed(DeskError(.internalError, "the desktop on \(display) could not be launched (\(error)); see deskd's log."))
        }
        record.session.desktopPid = desktop
        // Who the desktop is, so a watch begun later is not put on a newer process with its pid.
        desktopStartTicks = host.identity(of: desktop)?.startTicks
        let cgroup = record.cgroup.map(SessionCGroup.init(path:))
        let reached: @Sendable () -> Bool = {
            host.desktopClients(xvnc: xvnc, display: display, cgroup: cgroup, desktop: desktop)?.isEmpty == false
        }
        var outcome = await onDedicatedThread { login.awaitDesktop(until: deadline, settled: reached) }
        try await stopIfKilled()
        if case .ended(role: .desktop, how: .exited(status: 0)) = outcome {
            let session = record.session, cgroup = record.cgroup.map(SessionCGroup.init(path:))
            let left = await onDedicatedThread { host.processes(of: session, cgroup: cgroup).filter { $0 != xvnc && $0 != desktop } }
            if !left.isEmpty {
                desktopLeftRunning(logDirectory: logDirectory, processes: left.count)
                outcome = await onDedicatedThread { login.awaitDesktop(until: deadline, settled: reached) }
                try await stopIfKilled()
                if case .stillStarting = outcome {
                    await finish(.startFailed("desktop exited at once"))
                    throw .failed(DeskError(.desktopExited, "the desktop \"\(template)\" exited at once on \(display), and the \(left.count) process(es) it left running did not open the display within \(environment.configuration.value.startTimeout), so deskd ended the session. Run the desktop in the foreground as the last line of the script (exec startxfce4, not startxfce4 &)."))
                }
            }
        }
        switch outcome {
        case .settled:
            return
        case .stillStarting:
            // Running, but not on its display yet: the start stands, as the desktop may be slow
            // (a login script waiting on the network); its log says why if it never gets there.
            logger.warning("the desktop has not opened its display by the start deadline; answering anyway",
                           metadata: record.session.logMetadata)
            environment.archive.note("the desktop had not opened its display \(environment.configuration.value.startTimeout) after the start; deskd answered the start anyway.", to: .desktop, in: logDirectory)
        case .ended(let role, let how):
            try await failFirstMoments(role: role.rawValue, how: how.description, logDirectory: logDirectory, template: template)
        }
    }

    /// The desktop's script ended and left processes of its own running: the session now lives
    /// as long as they hold its display. Said once, in the desktop's log and deskd's.
    private func desktopLeftRunning(logDirectory: String?, processes: Int) {
        guard record.desktopLeftClients != true else { return }
        record.desktopLeftClients = true
        logger.info("the desktop's script exited leaving processes running; the session stays while they hold the display",
                    metadata: record.session.logMetadata.merging(["session.processes": "\(processes)"]) { $1 })
        if let logDirectory {
            environment.archive.note("the desktop's script exited and left \(processes) process(es) running; the session stays for as long as they use the display.", to: .desktop, in: logDirectory)
        }
    }

    /// Ends a session whose desktop or Xvnc ended before the desktop reached its display, and says so.
    private func failFirstMoments(role: String, how: String, logDirectory: String, template: String) async throws(LaunchFailure) -> Never {
        let log = role == "xvnc" ? "xvnc.log" : "desktop.log"
        let host = self.host
        let lines = await onDedicatedThread { host.tail(of: logDirectory + "/" + log, lines: 8) }
        logger.warning("session process exited before the desktop reached its display; start failed",
                       metadata: record.session.logMetadata.merging(["process.role": "\(role)", "process.exit": "\(how)"]) { $1 })
        await finish(.startFailed("\(role) exited at once"))
        let tail = lines.isEmpty ? "its log is empty" : "its last log lines: " + lines.suffix(4).joined(separator: " | ")
        if role == "xvnc" {
            throw .failed(DeskError(.xvncExited, "Xtigervnc on \(display) \(how) just after it answered, so deskd ended the session; \(tail)"))
        }
        // With sessions.user_xstartup on, the user's own ~/.vnc/xstartup may have run instead.
        let what = honoursUserXstartup ? "the desktop \"\(template)\" (or ~/.vnc/xstartup, which runs instead where it exists)" : "the desktop \"\(template)\""
        throw .failed(DeskError(.desktopExited, "\(what) \(how) before it opened its display on \(display), so deskd ended the session; \(tail). Fix the desktop, or start another (deskctl desktops lists them)."))
    }

    private func startDesktop() async {
        guard isRunning, let login else { return }
        let deadline = ContinuousClock.now + .seconds(10)
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

    /// The admin's certificate and key, read as root from the configured (root-controlled) paths.
    private func tlsMaterial(_ exposure: VNCExposure) throws(LaunchFailure) -> (certificate: [UInt8], key: [UInt8])? {
        guard let certificatePath = exposure.tlsCertificate, let keyPath = exposure.tlsKey else { return nil }
        guard let certificate = host.readRootFile(certificatePath, limit: 1 << 20), let key = host.readRootFile(keyPath, limit: 1 << 20) else {
            throw .failed(DeskError(.internalError, "cannot read the TLS certificate \(certificatePath) or key \(keyPath) (network.tls_certificate, network.tls_key); check that both exist."))
        }
        return (certificate, key)
    }

    static func xvncArguments(display: Display, geometry: Geometry, depth: Int, directory: SessionDirectory, user: String,
                              configuration: DaemonConfiguration) -> [String] {
        let exposure = configuration.vncExposure
        return [
            display.description,
            // X clients must show the session's cookie: without -auth, every local user could
            // open the display, read the screen and type into it.
            "-auth", directory.xauthority,
            "-nolisten", "tcp",
            "-rfbauth", directory.passwordFile,
            "-geometry", geometry.description,
            "-depth", String(depth),
            "-desktop", "\(user)'s desktop (\(display))",
            "-AlwaysShared",
        ]
        + exposure.xvncArguments(unixSocket: directory.rfbSocket, port: display.rfbPort(base: exposure.portBase),
                                 tlsFiles: exposure.tlsCertificate == nil ? nil : (directory.tlsCertificate, directory.tlsKey))
        + (configuration.xvncMaxIdleSeconds.map { ["-MaxIdleTime", String($0)] } ?? [])
        // The gateway can drop cut text on its way from a browser, but Xvnc's own travels among
        // framebuffer updates: only Xvnc can keep it from the browser (and so from every viewer).
        + (configuration.web.isOn && !configuration.web.clipboard.toBrowserAllowed ? ["-SendCutText=0"] : [])
        + (configuration.xvncMaxDisconnectionSeconds.map { ["-MaxDisconnectionTime", String($0)] } ?? [])
    }

    // MARK: Adoption

    /// Takes back a session a previous deskd left running (its Xvnc is checked by the caller).
    func adopt() {
        lifecycle = .ready
        watchExits()
    }

    // MARK: Viewers and health

    /// Applies what the viewer census found; only a running session moves. The monitor's
    /// census (the one that also read Xvnc's state) looks at a desktop's left clients too.
    func apply(_ count: ViewerCensus.Count, now: Date) async {
        guard isRunning else { return }
        var session = record.session
        if session.clients > 0 && count.viewers == 0 { session.lastClientAt = now }
        if count.viewers > 0 { session.lastClientAt = nil }
        session.clients = count.viewers
        session.idleSeconds = count.viewers > 0 ? 0 : max(0, Int(now.timeIntervalSince(session.lastClientAt ?? session.startedAt)))
        let stopped = count.xvncStopped ?? (lifecycle == .unresponsive && !failedProbe)
        let health: Lifecycle = stopped || failedProbe ? .unresponsive : .ready
        let persistNow = session.lastClientAt != record.session.lastClientAt || health != lifecycle
        record.session = session
        lifecycle = health
        if persistNow { persist() }
        if count.xvncStopped != nil, record.desktopLeftClients == true { await checkLeftClients() }
    }

    /// A real RFB session with Xvnc, authenticated with the session's password (read back from
    /// its file). The kernel must say the endpoint is Xvnc's first, so a squatter never sees a
    /// password response. No complete handshake within `timeout`: the session is unresponsive.
    func probe(timeout: Duration) async throws(DeskError) -> ProbeReport {
        try checkRunning()
        let exposure = environment.configuration.value.vncExposure
        let host = self.host, directory = self.directory, endpoint = self.endpoint, xvnc = record.session.pid, display = self.display
        let outcome = await onDedicatedThread { () -> Result<RFBProbe, RFBClient.Failure> in
            let password = host.readPassword(of: directory).flatMap(VNCPasswordFile.decode)
            return host.probe(endpoint, host: exposure.reachableAddress, xvnc: xvnc, authenticate: exposure.allowsPasswordProbe,
                              password: password, timeout: timeout)
        }
        switch outcome {
        case .success(let found):
            failedProbe = false
            if lifecycle == .unresponsive {
                lifecycle = .ready
                persist()
            }
            let milliseconds = Double(found.roundTrip.components.seconds) * 1000 + Double(found.roundTrip.components.attoseconds) / 1e15
            return ProbeReport(display: display, answered: true, protocolVersion: found.protocolVersion, desktopName: found.desktopName,
                               width: found.width, height: found.height, roundTripMilliseconds: milliseconds)
        case .failure(.impostor(let what)):
            logger.warning("session endpoint held by another process", metadata: record.session.logMetadata.merging(["endpoint.holder": "\(what)"]) { $1 })
            throw DeskError(.displayBusy, "display \(display) was not probed: \(what); deskd sent it nothing. Kill the session (deskctl kill \(display)) and start a new one.")
        case .failure:
            // Only for a session still running: one that ended while it was probed keeps no mark.
            if isRunning {
                failedProbe = true
                if lifecycle == .ready {
                    lifecycle = .unresponsive
                    persist()
                }
            }
            return ProbeReport(display: display, answered: false)
        }
    }

    /// Probes and passwords are for a running session: a starting one has no Xvnc to ask yet and
    /// is about to hand out its own password; an ending one is going.
    private func checkRunning() throws(DeskError) {
        switch lifecycle {
        case .ready, .unresponsive: return
        case .starting: throw DeskError(.noSuchSession, "the session on \(display) is still starting; try again once deskctl list shows it ready.")
        case .stopping, .ended: throw DeskError(.noSuchSession, "the session on \(display) is ending; see deskctl list.")
        }
    }

    // MARK: The browser gateway

    /// What the gateway needs to log in to this session's Xvnc for a browser: its socket, the
    /// pid that must be serving it, and a password read now from the session's file (a `passwd`
    /// since the link was made counts). nil unless the session runs, on a Unix socket.
    ///
    /// A view-only browser logs in with the view-only password, so that Xvnc itself gives it
    /// view rights only: no input, and none of the owner's clipboard (ServerCutText), which the
    /// gateway could not withhold from a full login without parsing every framebuffer update. A
    /// session without a view-only password gets one now, which nobody is shown.
    func gatewayLogin(viewOnly: Bool) async -> (endpoint: RFBEndpoint, address: String, xvnc: Int32, password: String)? {
        let exposure = environment.configuration.value.vncExposure
        guard isRunning, exposure.allowsPasswordProbe || !exposure.usesTCP else { return nil }
        let host = self.host, directory = self.directory, owner = record.session.uid, group = record.session.gid
        let lock = passwordFile
        let password = await onDedicatedThread { () -> String? in
            lock.withLock {
                guard let bytes = host.readPassword(of: directory), let full = VNCPasswordFile.decode(bytes) else { return nil }
                guard viewOnly else { return full }
                if let existing = VNCPasswordFile.decodeViewOnly(bytes) { return existing }
                let fresh = SessionPassword.generate()
                let written = (try? host.replacePassword(of: directory, with: VNCPasswordFile.encode(password: full, viewOnly: fresh),
                                                         owner: owner, group: group)) != nil
                return written ? fresh : nil
            }
        }
        guard let password else {
            logger.warning("the gateway cannot read or write the session's password file", metadata: record.session.logMetadata)
            return nil
        }
        return (endpoint, exposure.reachableAddress, record.session.pid, password)
    }

    // MARK: Passwords

    /// A new full password, or (`viewOnly`) a new view-only one beside the kept full one. Xvnc
    /// reads its password file at every authentication, so the next viewer needs the new one;
    /// connected viewers stay connected.
    func rotatePassword(viewOnly: Bool) async throws(DeskError) -> Session {
        try checkRunning()
        let host = self.host, directory = self.directory, owner = record.session.uid, group = record.session.gid
        let fresh = SessionPassword.generate()
        let display = self.display, lock = passwordFile
        // The directory is the user's: read and written off the actor, like every other touch of it.
        let written = await onDedicatedThread { () -> Result<Void, DeskError> in
            lock.lock()
            defer { lock.unlock() }
            let bytes: [UInt8]
            if viewOnly {
                guard let current = host.readPassword(of: directory).flatMap(VNCPasswordFile.decode) else {
                    return .failure(DeskError(.internalError, "the password file of \(display) is missing or damaged; set a new full password first with: deskctl passwd \(display)."))
                }
                bytes = VNCPasswordFile.encode(password: current, viewOnly: fresh)
            } else {
                // A new full password also drops any view-only one: rotating is how access is revoked.
                bytes = VNCPasswordFile.encode(password: fresh)
            }
            do { try host.replacePassword(of: directory, with: bytes, owner: owner, group: group) } catch {
                return .failure(DeskError(.internalError, "could not write the new password for \(display): \(error)."))
            }
            return .success(())
        }
        try written.get()
        var reply = session
        if viewOnly { reply.viewOnlyPassword = fresh } else { reply.password = fresh }
        return reply
    }

    // MARK: Exits

    private func watchExits() {
        host.onExit(of: record.session.pid) { [weak self] in
            Task { await self?.processExited(role: "xvnc") }
        }
        // A desktop whose script already left its clients running: its clients are what keeps
        // the session, and the monitor looks at them each second (checkLeftClients).
        if record.desktopLeftClients == true { return }
        guard let desktop = record.session.desktopPid else { return }
        // The desktop ended between its first moments and this watch, and its pid went to a
        // newer process: watching that one would keep the session past its desktop.
        if let ticks = desktopStartTicks, host.identity(of: desktop)?.startTicks != ticks {
            Task { await self.processExited(role: "desktop") }
            return
        }
        watchDesktop(desktop)
    }

    /// Watched even when its exit does not end the session: the monitor also reaps it.
    private func watchDesktop(_ pid: Int32) {
        host.onExit(of: pid) { [weak self] in
            Task { await self?.processExited(role: "desktop") }
        }
    }

    private func processExited(role: String) async {
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

    /// Censuses in a row that found none of the session's X clients, for a session kept for
    /// them: it ends at the second, so one odd look at the kernel's tables ends nothing.
    private var emptyClientCensuses = 0

    /// The desktop's script has ended. If it ended at once (as `gnome-session &` as a last line
    /// does: within the start's own deadline, `sessions.start_timeout`, of the start) and
    /// processes of the session hold its display, the session stays with them; true if so. A
    /// desktop that ran for a while and ended is a logout, whatever it left (Debian's
    /// Xtigervnc-session leaves `vncconfig -iconic` behind): its session ends, as before.
    private func keepForLeftClients() async -> Bool {
        if record.desktopLeftClients != true {
            let window = environment.configuration.value.startTimeout
            guard Date().timeIntervalSince(record.session.startedAt) < Double(window.components.seconds) else { return false }
        }
        guard let clients = await sessionClients(), !clients.isEmpty, isRunning else { return false }
        desktopLeftRunning(logDirectory: record.logDirectory, processes: clients.count)
        persist()
        return true
    }

    /// The session's processes that hold its display now (see XClients); nil if unknown.
    private func sessionClients() async -> [pid_t]? {
        let host = self.host, xvnc = record.session.pid, display = self.display
        let cgroup = record.cgroup.map(SessionCGroup.init(path:))
        return await onDedicatedThread { host.desktopClients(xvnc: xvnc, display: display, cgroup: cgroup, desktop: nil) }
    }

    /// The monitor's look, each second, at a session kept for the clients its desktop left: it
    /// ends once none of them holds the display. A look each second rather than a watch per
    /// client: the clients are the user's to multiply, and each watch would cost deskd a
    /// descriptor.
    private func checkLeftClients() async {
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

    // MARK: Teardown

    /// Ends everything of the session and removes its traces, once: a second caller (two kills,
    /// an exit noticed during a kill) waits for the first. A kill of a starting session waits
    /// for the start, which then ends the session instead of handing it out.
    func end(_ cause: EndCause) async {
        if launching {
            if stopWhileStarting == nil { stopWhileStarting = cause }
            await withCheckedContinuation { startWaiters.append($0) }
        }
        await finish(cause)
    }

    /// The one teardown, started by whoever comes first.
    private func finish(_ cause: EndCause) async {
        if let teardown {
            await teardown.value
            return
        }
        lifecycle = .stopping
        let task = Task { await self.tearDown(cause) }
        teardown = task
        await task.value
    }

    /// SIGTERM to every process, SIGKILL after the grace period, then the login, the cgroup, the
    /// display link, the lock and socket Xvnc left, the directory and the record. Everything is
    /// found by the session's id or checked against it, so a newer session on the same display
    /// is never touched. Safe for a session half started or already gone.
    private func tearDown(_ cause: EndCause) async {
        let session = record.session, host = self.host, reason = cause.reason
        // Browsers watching through the gateway are closed first, not left to notice Xvnc go,
        // and the session's unused links are dropped rather than left to expire.
        environment.browsers.disconnect(sessionID: id)
        environment.links.forget(sessionID: id)
        let configuration = environment.configuration.value
        let cgroup = record.cgroup.map(SessionCGroup.init(path:))
        let members: @Sendable () -> [Int32] = { host.processes(of: session, cgroup: cgroup) }

        var remaining = await onDedicatedThread(members)
        if !remaining.isEmpty {
            for pid in remaining { host.signal(pid, SIGTERM) }
            remaining = await Self.waitUntilEmpty(members, for: configuration.killGrace)
        }
        if !remaining.isEmpty {
            logger.info("session did not end on SIGTERM; sending SIGKILL", metadata: session.logMetadata.merging(["session.remaining": "\(remaining.count)"]) { $1 })
            if !(cgroup.map(host.killAll(in:)) ?? false) { for pid in remaining { host.signal(pid, SIGKILL) } }
            remaining = await Self.waitUntilEmpty(members, for: .seconds(5))
            if !remaining.isEmpty {
                logger.error("session processes survived SIGKILL", metadata: session.logMetadata.merging(["session.pids": "\(remaining)"]) { $1 })
            }
        }
        // deskd-session ends once the last session process has: it closes the PAM login then.
        if let helper = record.helper, helper > 0 {
            // The helper is deskd's child only if this deskd started it: after a restart its pid
            // may have gone to someone else, so it counts only while it is still the same process.
            let ticks = record.helperStartTicks
            let isHelper: @Sendable () -> Bool = {
                guard let now = host.identity(of: helper) else { return false }
                if let ticks { return now.startTicks == ticks }
                return now.uid == 0 && now.executable?.hasSuffix("/deskd-session") == true
            }
            let left = await Self.waitUntilEmpty({ isHelper() ? [helper] : [] }, for: .seconds(5))
            if !left.isEmpty {
                logger.error("deskd-session did not end after its session; killing it", metadata: session.logMetadata.merging(["helper.pid": "\(helper)"]) { $1 })
                if isHelper() { host.signal(helper, SIGKILL) }
            }
        }
        if let cgroup { host.removeCGroup(cgroup) }
        // Reap what is deskd's own child and was never watched (a start that failed early).
        for pid in [session.pid, session.desktopPid ?? 0] where pid > 0 { host.reap(pid) }
        host.unpublish(display, sessionID: id, in: configuration.sessionDirectories)
        // The tree is the user's, as large and as slow as they made it, and the lock is anyone's:
        // both are dealt with off the actor. An older deskd's directory sits at displays/<n>; once
        // that is a link, it is a newer session's, and removeSessionDirectory leaves it.
        let directory = self.directory, display = self.display
        await onDedicatedThread {
            if session.pid > 0 { host.releaseLock(display, ownedBy: session.pid) }
            host.removeSessionDirectory(directory)
        }
        environment.store.remove(sessionID: id)
        logger.info("session ended", metadata: session.logMetadata.merging(["session.reason": "\(reason)"]) { $1 })
        // The display is let go only once the end is on record: whoever no longer sees the
        // session in `list` finds how it ended in `history` and `logs`.
        await recordEnd(reason: reason)
        environment.metrics.sessionEnded(cause)
        lifecycle = .ended
        failedProbe = false
        await environment.registry.release(self)
    }

    /// Notes the end beside the session's logs and in the audit trail, whatever ended it, and
    /// drops the owner's logs beyond their newest `sessions.keep_logs` ended sessions.
    /// deskd-session has exited by now (teardown waits for it), so how each process ended is on disk.
    private func recordEnd(reason: String) async {
        let session = record.session
        var exits: [ProcessLog.Role: String] = [:]
        if let path = record.logDirectory {   // an older deskd's session keeps no logs
            let summary = SessionSummary(session)
            let archive = environment.archive, keep = environment.configuration.value.keptSessionLogs
            let live = await environment.registry.ids.subtracting([id])
            exits = await onDedicatedThread {
                let exits = archive.end(in: path, summary, reason: reason, at: Date())
                archive.prune(owner: session.uid, keep: keep, live: live)
                return exits
            }
        }
        environment.audit.record(AuditEntry(
            time: Date(), peerUID: 0, peerPID: getpid(), peerUser: "deskd", command: .ended, user: session.user, uid: session.uid,
            display: session.display, detail: "session=\(session.id)", ok: true, outcome: SessionLogs.outcome(reason: reason, exits: exits)
        ), changedSessions: true)
    }

    private func persist() {
        guard lifecycle != .starting, !isEnding else { return }
        do { try environment.store.save(record) } catch {
            logger.error("cannot write session record; the session will not survive a daemon restart", metadata: ["error": "\(error)"])
        }
    }

    /// Polls `members` until none is left or `limit` passes: first after a millisecond, then
    /// less and less often up to every 10 ms. Xvnc ends within a few milliseconds of SIGTERM,
    /// and a kill of two hundred sessions is as slow as its slowest waits.
    private static func waitUntilEmpty(_ members: @escaping @Sendable () -> [Int32], for limit: Duration) async -> [Int32] {
        let deadline = ContinuousClock.now + limit
        var remaining = members()
        var pause = Duration.milliseconds(1)
        while !remaining.isEmpty && ContinuousClock.now < deadline {
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(10))
            remaining = members()
        }
        return remaining
    }
}
