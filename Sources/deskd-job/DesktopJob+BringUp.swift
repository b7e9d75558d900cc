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
    /// A desktop whose script fails at once (a program it execs is missing: the shell ends
    /// within a few milliseconds) has ended by then, and that is reported as the failure it is
    /// rather than as a `ready` then an `ending`. Every start waits this long, so it is short.
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
        let (xvnc, display) = try startXvnc(account: account, directory: directory)
        try startDesktop(account: account, directory: directory, display: display)

        if !listener.start(session: spec.session, key: key, socketPath: directory.rfbSocket, xvnc: xvnc.pid, board: relays, events: events) {
            throw .failed(JobFailure("could not start the thread that accepts the gateway's relays."))
        }
        reporter.announce(JobReport(event: .ready, node: node, address: listener.address, port: listener.port,
                                    display: display.number, socket: directory.rfbSocket))
        isReady = true
        if warningPending {
            warningPending = false
            warnOfTheEnd()
        }
    }

    /// Xvnc on the lowest free display, answering RFB on the job's socket; the next display
    /// if another X server took this one first.
    private func startXvnc(account: UserAccount, directory: PrivateDirectory) throws(BringUpStop) -> (ChildProcess, Display) {
        let cookie = XAuthority.generate()
        let environment = DesktopEnvironment(account: account, sessionID: spec.session)
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
            guard let log = OutputLog(file: directory.openLog("xvnc.log")) else {
                throw .failed(JobFailure("could not make a pipe for Xvnc's output: \(String(cString: strerror(errno)))."))
            }
            let command = XvncCommandLine(spec: spec, display: display, directory: directory, user: account.name, node: node)
            let process: ChildProcess
            do {
                process = try ChildProcess.spawn(command.arguments, environment: environment.server, output: log.writeFD,
                                                 directory: account.home, umask: 0o077)
            } catch {
                throw .failed(JobFailure("could not start Xvnc (\(spec.xvnc)) on \(node): \(error.reason)."))
            }
            log.childStarted()
            logs.append(log)
            xvnc = process
            self.display = display

            switch try waitForRFB(from: process, socket: directory.rfbSocket) {
            case .answered:
                return (process, display)
            case .exited(let end) where log.mentions(XvncCommandLine.displayTakenPhrases) && tried.count < Self.displayRetries:
                StandardError.say("display \(display) was taken while Xvnc started (\(end)); trying the next.")
                tried.insert(display.number)
            case .exited(let end):
                throw .failed(JobFailure("Xvnc \(end) on \(node) before it answered" + (log.lastLine.map { "; its log ends: \($0)" } ?? "") + "."))
            case .timedOut:
                throw .failed(JobFailure("Xvnc on \(node) did not answer on its socket within \(Self.xvncAnswerTime)."))
            case .impostor(let what):
                throw .failed(JobFailure("Xvnc's socket on \(node) is not Xvnc's: \(what)."))
            }
        }
    }

    /// How Xvnc's start went.
    private enum XvncAnswer {
        case answered
        case exited(ProcessEnd)
        case timedOut
        /// Something answered that is not this job's Xvnc speaking RFB.
        case impostor(String)
    }

    /// Polls the socket with a real RFB greeting until it answers, Xvnc ends, or the job does.
    private func waitForRFB(from process: ChildProcess, socket: String) throws(BringUpStop) -> XvncAnswer {
        let deadline = ContinuousClock.now + Self.xvncAnswerTime
        while ContinuousClock.now < deadline {
            pause(.milliseconds(50))
            if let endCause { throw .ended(endCause) }
            if let end = process.end { return .exited(end) }
            do {
                let client = try RFBClient.connect(.unixSocket(path: socket), xvnc: process.pid, timeout: .seconds(2))
                _ = try client.greet()
                return .answered
            } catch {
                switch error {
                case .refused, .silent: continue   // not listening yet, or not answering yet
                case .impostor(let what), .rejected(let what): return .impostor(what)
                }
            }
        }
        return .timedOut
    }

    /// The desktop: the spec's xstartup, run by /bin/sh in a session of its own, with the
    /// account's environment, the display, and the session's marker.
    private func startDesktop(account: UserAccount, directory: PrivateDirectory, display: Display) throws(BringUpStop) {
        guard let log = OutputLog(file: directory.openLog("desktop.log")) else {
            throw .failed(JobFailure("could not make a pipe for the desktop's output: \(String(cString: strerror(errno)))."))
        }
        let environment = DesktopEnvironment(account: account, sessionID: spec.session).client(display: display, xauthority: directory.xauthority)
        do {
            desktop = try ChildProcess.spawn(["/bin/sh", directory.xstartup], environment: environment, output: log.writeFD,
                                             directory: account.home, umask: 0o022)
        } catch {
            throw .failed(JobFailure("could not start the desktop on \(node): \(error)."))
        }
        log.childStarted()
        logs.append(log)
        desktopLog = log
        let settled = ContinuousClock.now + Self.desktopSettleTime
        while ContinuousClock.now < settled, desktop?.hasEnded == false, endCause == nil {
            pause(settled - .now)
        }
        if let endCause { throw .ended(endCause) }
        if let end = desktop?.end {
            throw .failed(JobFailure("the desktop's startup script \(end) at once" + (log.lastLine.map { "; its output ends: \($0)" } ?? "") + "."))
        }
    }
}
