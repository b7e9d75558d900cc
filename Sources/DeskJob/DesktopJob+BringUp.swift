import DeskCore
import DeskLinux
import DeskSessionProtocol
import Glibc

/// How bring-up stops short of `ready`.
enum BringUpStop: Error {
    /// The desktop could not start: the sentence for deskd and the user.
    case failed(JobFailure)
    /// Slurm or deskd ended the job meanwhile.
    case ended(EndCause)
}

extension DesktopJob {
    /// Xvnc answers RFB on a display of its own and the desktop runs on it.
    static let xvncAnswerTime: Duration = .seconds(20)
    /// How long the desktop has to reach its display (its first X client) before the job reports
    /// it ready anyway. A script that fails before then (a program it execs is missing, a
    /// session manager that aborts) is reported as the failure it is, not as `ready`.
    static let desktopReadyTime: Duration = .seconds(30)
    /// Where the kernel cannot say which processes hold the display: a script that fails at
    /// once (a program it execs is missing) has ended by then.
    static let desktopSettleTime: Duration = .milliseconds(100)
    /// Displays tried after the first was taken under Xvnc's feet.
    static let displayRetries = 5

    /// Everything up to `ready`: the private directory and its files, the relay's listener,
    /// Xvnc, the desktop. Then deskd hears where the desktop is.
    func bringUp() throws(BringUpStop) {
        guard let account = UserAccount.withUID(getuid()) else {
            throw .failed(JobFailure("the job's account (uid \(getuid())) is not known on \(node), so its desktop has no home or shell."))
        }
        self.account = account
        let directory: PrivateDirectory
        do {
            directory = try PrivateDirectory.make(temporaryDirectory: DesktopEnvironment.variable("TMPDIR"))
            self.directory = directory
            try directory.write(PrivateDirectory.passwordName, VNCPasswordFile.encode(password: spec.password, viewOnly: spec.viewOnlyPassword), mode: 0o600)
            try directory.write(PrivateDirectory.xstartupName, Array(spec.xstartup.utf8), mode: 0o700)
        } catch {
            throw .failed(error)
        }
        let (host, port) = spec.reportAddress!
        guard let address = NodeIdentity.address(towards: host, port: port) else {
            throw .failed(JobFailure("\(node) has no route to deskd at \(spec.report), so the login node could not reach its desktop either."))
        }
        let listener: RelayListener
        do { listener = try RelayListener.open(address: address) } catch { throw .failed(error) }
        self.listener = listener

        do { try DisplayChoice.checkSocketDirectory(node: node) } catch { throw .failed(error) }
        let server: ChildProcess
        if type(of: self.server).ownsXDisplay {
            server = try startOnFreeDisplay(account: account, directory: directory)
        } else {
            server = try startChoosingItsOwnDisplay(account: account, directory: directory)
        }
        try startDesktop(account: account, directory: directory)

        if !listener.start(session: spec.session, key: key, socketPath: directory.rfbSocket, xvnc: server.pid, board: relays, events: events) {
            throw .failed(JobFailure("could not start the thread that accepts the gateway's relays."))
        }
        // A Wayland desktop's X display is Xwayland's, chosen by its compositor (0 where it has none).
        let xDisplay = display ?? recordedXDisplay(in: directory) ?? Display(0)
        reporter.announce(JobReport(event: .ready, node: node, address: listener.address, port: listener.port,
                                    display: xDisplay.number, socket: directory.rfbSocket))
        isReady = true
        if warningPending {
            warningPending = false
            warnOfTheEnd()
        }
    }

    /// An X server that owns its display (Xvnc) on the lowest free one, answering RFB on the
    /// job's socket; the next display if another X server took this one first.
    private func startOnFreeDisplay(account: UserAccount, directory: PrivateDirectory) throws(BringUpStop) -> ChildProcess {
        let cookie = XAuthority.generate()
        var tried: Set<Int> = []
        while true {
            guard let display = DisplayChoice.lowestFree(skipping: tried) else {
                throw .failed(JobFailure("no X display is free on \(node) (:\(DisplayChoice.range.lowerBound) to :\(DisplayChoice.range.upperBound) are all taken)."))
            }
            do {
                try directory.write(PrivateDirectory.xauthorityName, cookie.fileContents(for: display), mode: 0o600, replacing: true)
            } catch {
                throw .failed(error)
            }
            let needs = try displayServerNeeds(display: display, directory: directory, user: account.name)
            // Before the wait, which a signal may end: the end releases this display's lock.
            self.display = display
            let (process, log, readiness) = try launchServer(needs, account: account, directory: directory)
            let decision = decide(readiness, process: process, log: log, retriesLeft: tried.count < Self.displayRetries)
            guard decision == .tryNextDisplay else { return try ready(decision, process: process) }
            StandardError.say("display \(display) was taken while \(server.name) started (\(process.end ?? .notStarted)); trying the next.")
            tried.insert(display.number)
        }
    }

    /// A server that owns no X display (a Wayland compositor with wayvnc, headless, the same
    /// launcher as deskd's on the login node) on the job's socket: its RFB socket is in the
    /// private directory, and its Wayland and IPC sockets are in the login's runtime directory
    /// or that one, the user's alone either way. No display to choose: Xwayland takes the first
    /// free one itself, and nothing of the launcher's says a display was taken.
    private func startChoosingItsOwnDisplay(account: UserAccount, directory: PrivateDirectory) throws(BringUpStop) -> ChildProcess {
        // No X display of its own: the title and the needs' display are only names here.
        let needs = try displayServerNeeds(display: Display(0), directory: directory, user: account.name)
        let (process, log, readiness) = try launchServer(needs, account: account, directory: directory)
        // No display of its own to retry on.
        return try ready(decide(readiness, process: process, log: log, retriesLeft: false), process: process)
    }

    /// The display server started with `needs`, its output on its way to its log, and how its
    /// RFB socket answered (`waitForRFB`).
    private func launchServer(_ needs: DisplayServerNeeds, account: UserAccount,
                              directory: PrivateDirectory) throws(BringUpStop) -> (ChildProcess, OutputLog, RFBReadiness) {
        guard let log = OutputLog(file: directory.openLog(Self.serverLog)) else {
            throw .failed(JobFailure("could not make a pipe for \(server.name)'s output: \(String(cString: strerror(errno)))."))
        }
        let environment = DesktopEnvironment(account: account, sessionID: spec.session).server(of: server, needs)
        let process: ChildProcess
        do {
            process = try ChildProcess.spawn(server.commandLine(needs), environment: environment, output: log.writeFD,
                                             directory: account.home, umask: 0o077)
        } catch {
            throw .failed(JobFailure("could not start \(server.name) (\(server.commandLine(needs)[0])) on \(node): \(error.reason)."))
        }
        log.childStarted()
        logs.append(log)
        xvnc = process
        displayNeeds = needs
        return (process, log, try waitForRFB(from: process, socket: directory.rfbSocket))
    }

    /// What the server's start comes to (BringUpDecision).
    private func decide(_ readiness: RFBReadiness, process: ChildProcess, log: OutputLog, retriesLeft: Bool) -> BringUpDecision.AfterServer {
        BringUpDecision.afterServer(readiness, server: server, node: node, end: process.end, recentLog: log.recentLines, lastLogLine: log.lastLine,
                                    retriesLeft: retriesLeft, answerTime: Self.xvncAnswerTime)
    }

    /// The server, once its socket answered; else the failure that ends the start.
    private func ready(_ decision: BringUpDecision.AfterServer, process: ChildProcess) throws(BringUpStop) -> ChildProcess {
        switch decision {
        case .ready: return process
        case .fail(let sentence): throw .failed(JobFailure(sentence))
        // Only with retries left, which the caller takes.
        case .tryNextDisplay: throw .failed(JobFailure("\(server.name) lost its display on \(node) to another X server; try again."))
        }
    }

    /// The X display a server that owns none recorded in the private directory (a compositor's
    /// Xwayland, as its startup hook wrote it), read as a file of the user's.
    func recordedXDisplay(in directory: PrivateDirectory) -> Display? {
        type(of: server).leftoverDisplays(in: directory.path).first
    }

    /// The display server's output, whichever server it is, named as deskd-session names it.
    static let serverLog = ProcessRole.server.rawValue + ".log"

    /// The server the job's desktop draws on: the spec's Xvnc, or a Wayland compositor with wayvnc.
    var server: any DisplayServer { spec.displayServer }

    /// What the job's Xvnc is given: its display, the job's own cookie and password file, RFB on
    /// a Unix socket in the job's directory only (no TCP port: the relay is the way in from the
    /// login node, `ssh -L` to the socket the way in for a user with a login on the node), and
    /// the admin's policy as deskd passed it (only that: `Xvnc.policy(from:)`).
    func displayServerNeeds(display: Display, directory: PrivateDirectory, user: String) throws(BringUpStop) -> DisplayServerNeeds {
        let geometry: Geometry
        do { geometry = try Geometry(parsing: spec.geometry) } catch {
            throw .failed(JobFailure("the job's spec has no usable geometry: \(error.message)"))
        }
        guard let policy = Xvnc.policy(from: spec.xvncOptions) else {
            throw .failed(JobFailure("the job's spec asks Xvnc for options deskd never passes (\(spec.xvncOptions.joined(separator: " "))); the login node's deskd is not this job's."))
        }
        return DisplayServerNeeds(display: display, directory: directory.path, xauthority: directory.xauthority, passwordFile: directory.passwordFile,
                                  rfbSocket: directory.rfbSocket, geometry: geometry, depth: spec.depth,
                                  title: "\(user)'s desktop (\(node))", policy: policy)
    }

    /// Polls the socket with a real RFB greeting until it answers, Xvnc ends, or the job does:
    /// the same look as deskd's at a local desktop (`RFBReadiness.awaitAnswer`).
    private func waitForRFB(from process: ChildProcess, socket: String) throws(BringUpStop) -> RFBReadiness {
        let readiness = RFBReadiness.awaitAnswer(.unixSocket(path: socket), xvnc: process.pid, until: .now + Self.xvncAnswerTime, attemptMilliseconds: 2000,
                                           serverRuns: { endCause == nil && process.end == nil }, pause: { pause(.milliseconds(10)) })
        if let endCause { throw .ended(endCause) }
        return readiness
    }

    /// The desktop: the spec's xstartup, run by /bin/sh in a session of its own, with the
    /// account's environment, the display, and the session's marker.
    private func startDesktop(account: UserAccount, directory: PrivateDirectory) throws(BringUpStop) {
        guard let log = OutputLog(file: directory.openLog("desktop.log")) else {
            throw .failed(JobFailure("could not make a pipe for the desktop's output: \(String(cString: strerror(errno)))."))
        }
        guard let displayNeeds else { throw .failed(JobFailure("the desktop was to start before its display server.")) }
        let environment = DesktopEnvironment(account: account, sessionID: spec.session).client(of: server, displayNeeds)
        do {
            desktop = try ChildProcess.spawn(server.desktopCommand(xstartup: directory.xstartup), environment: environment, output: log.writeFD,
                                             directory: account.home, umask: 0o022)
        } catch {
            throw .failed(JobFailure("could not start the desktop on \(node): \(error)."))
        }
        log.childStarted()
        logs.append(log)
        desktopLog = log
        // Ready as deskd's local desktops are: once a process of the desktop holds a connection
        // to its display (its first X client), not merely once the script has not died yet;
        // a script that aborts meanwhile fails the start with its last line.
        let deadline = ContinuousClock.now + Self.desktopReadyTime
        let sweep = SessionSweep(sessionID: spec.session, uid: getuid(), me: getpid())
        let started = ContinuousClock.now
        // Where its clients connect: the X display, or the compositor's Wayland socket.
        let socket = type(of: server).clientSocket(display: display ?? Display(0), uid: getuid(), directory: directory.path)
        while ContinuousClock.now < deadline, desktop?.hasEnded == false, endCause == nil, let xvnc, !xvnc.hasEnded {
            let serverPID = xvnc.pid
            // The server's accepted connections first (one socket table); only once there is
            // one, the session's processes (a walk of /proc) to see whether the desktop holds it.
            if BringUpDecision.desktopReached(clientEnds: XClients.clientEnds(of: serverPID, socket: socket),
                                              holds: { !XClients.holders(among: sweep.survivors().map(\.pid), of: $0, xvnc: serverPID).isEmpty },
                                              sinceStart: ContinuousClock.now - started, settleTime: Self.desktopSettleTime) { return }
            pause(.milliseconds(25))
        }
        if let endCause { throw .ended(endCause) }
        if let failure = BringUpDecision.desktopNotReached(server: server, serverEnd: xvnc?.end, desktopEnd: desktop?.end,
                                                          desktopLastLine: log.lastLine, node: node) {
            throw .failed(JobFailure(failure))
        }
        // Running, but not on its display yet: the start stands, as deskd's does (a login
        // script may be waiting on the network); the desktop's log says why if it never gets there.
        StandardError.say("the desktop has not opened its display \(Self.desktopReadyTime) after its start; reporting it ready anyway.")
    }
}
