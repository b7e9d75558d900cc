import CDeskShims
import DeskCore
import DeskLinux
import DeskSessionProtocol
import Glibc

/// One cluster desktop, from its spec to the end of its last process. Its main thread starts,
/// watches and ends processes; the other threads (signals, the report line, the relays) only
/// post events to it. Bring-up is DesktopJob+BringUp.swift, the end DesktopJob+End.swift.
public final class DesktopJob {
    let spec: JobSpec
    let key: [UInt8]
    let node = NodeIdentity.name
    let events: EventQueue
    let reporter: Reporter
    let relays = RelayBoard()

    var account: UserAccount?
    var directory: PrivateDirectory?
    var listener: RelayListener?
    /// The display server's process: Xvnc, or for a Wayland desktop the launcher that becomes
    /// wayvnc (its compositor is one of the session's processes).
    var xvnc: ChildProcess?
    var display: Display?
    /// What the display server was started with, which its clients need too.
    var displayNeeds: DisplayServerNeeds?
    var desktop: ChildProcess?
    /// The output of Xvnc and the desktop, on its way to their logs.
    var logs: [OutputLog] = []
    var desktopLog: OutputLog?
    /// Set by the first of: Slurm's signal, deskd's `end`, the desktop's or Xvnc's exit.
    var endCause: EndCause?
    var isReady = false
    /// The end has begun: nothing new is started (a late warning's xmessage would be one more
    /// process for the end to find).
    var isEnding = false
    /// Slurm's warning came before the desktop was up: shown once it is.
    var warningPending = false
    var viewerCountDue = false

    /// Runs the job; its exit status.
    public static func start(spec: JobSpec) -> Int32 {
        let events = EventQueue()
        // First, while this is the only thread: every thread made later inherits the mask.
        JobSignals.watch(into: events)
        // A desktop process that double-forks is reparented here, not to init, so it stays a
        // descendant the end can find, and is reaped here when it ends.
        if deskd_become_subreaper() != 0 {
            StandardError.say("could not become a child subreaper (\(String(cString: strerror(errno)))); a double-forked process is then found by its marker only.")
        }
        // The job's own files are the user's alone, whatever umask Slurm passed on.
        umask(0o077)
        // JobSpec.decode has checked both.
        let (host, port) = spec.reportAddress!
        let reporter = Reporter(host: host, port: port, session: spec.session, key: spec.keyBytes!, events: events)
        if !reporter.start() { StandardError.say("could not start the thread of the report line to deskd; the desktop runs without it.") }
        return DesktopJob(spec: spec, events: events, reporter: reporter).run()
    }

    private init(spec: JobSpec, events: EventQueue, reporter: Reporter) {
        self.spec = spec
        self.key = spec.keyBytes!
        self.events = events
        self.reporter = reporter
    }

    private func run() -> Int32 {
        do {
            try bringUp()
        } catch {
            switch error {
            case .failed(let failure): return fail(failure)
            case .ended(let cause): return end(cause)
            }
        }
        return end(watch())
    }

    /// The desktop is up: waits for its end, keeping deskd's viewer count current.
    private func watch() -> EndCause {
        var nextCount = ContinuousClock.now
        var firstEnd: ContinuousClock.Instant?
        while true {
            if let endCause { return endCause }
            // scancel and the time limit signal every process of the job at once: Xvnc or a
            // desktop that ended then (killed, or exiting 0 as Xvnc does on SIGTERM) is Slurm's
            // end, whose own signal here may be a moment behind. So any end waits 100 ms for it.
            // A desktop that ended alone waits up to 500 ms for its display server: one killed
            // closes its clients' connections before its own exit is there to reap (the kernel
            // frees its memory first), and on a loaded node the desktop's exit, caused by the
            // server's death, was seen first and blamed.
            if xvnc?.end != nil || desktop?.end != nil {
                let since = firstEnd ?? .now
                firstEnd = since
                let wait: Duration = xvnc?.end == nil ? .milliseconds(500) : .milliseconds(100)
                if ContinuousClock.now - since < wait {
                    pause(.milliseconds(20))
                    continue
                }
            }
            if let end = xvnc?.end { return .xvncEnded(end) }
            if let end = desktop?.end { return .desktopEnded(end, lastLine: desktopLog?.lastLine) }
            if viewerCountDue || ContinuousClock.now >= nextCount {
                countViewers()
                viewerCountDue = false
                nextCount = ContinuousClock.now + ViewerCount.interval
            }
            pause(max(.zero, nextCount - .now))
        }
    }

    private func countViewers() {
        guard let xvnc, let directory else { return }
        reporter.update(viewers: ViewerCount(socketPath: directory.rfbSocket, xvnc: xvnc.pid).take(relays: relays))
    }

    // MARK: Events

    /// Waits up to `duration` for an event or a child's output, then acts on what came and
    /// reaps whatever child has ended. The only place the main thread waits.
    func pause(_ duration: Duration) {
        var fds = [pollfd(fd: events.wakeFD, events: Int16(POLLIN), revents: 0)]
        fds += logs.filter { $0.readFD >= 0 }.map { pollfd(fd: $0.readFD, events: Int16(POLLIN), revents: 0) }
        _ = poll(&fds, nfds_t(fds.count), Reporter.milliseconds(duration))
        for log in logs { log.drain() }
        for event in events.take() { handle(event) }
        reapChildren()
    }

    private func handle(_ event: JobEvent) {
        switch event {
        case .signal(let number) where JobSignals.ending.contains(number):
            if endCause == nil { endCause = .signal(number) }
        case .signal(JobSignals.warning):
            if isEnding { break }
            if isReady { warnOfTheEnd() } else { warningPending = true }
        case .signal:
            break   // SIGCHLD: every pause reaps
        case .command(.end):
            if endCause == nil { endCause = .deskd }
        case .command(.accepted):
            break
        case .relaysChanged:
            viewerCountDue = true
        }
    }

    /// Reaps every ended child: Xvnc, the desktop, xmessage, and every orphan of the session
    /// that was reparented here.
    func reapChildren() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return }
            if let xvnc, xvnc.pid == pid, !xvnc.hasEnded { xvnc.reaped(status: status) }
            if let desktop, desktop.pid == pid, !desktop.hasEnded { desktop.reaped(status: status) }
        }
    }

    /// Slurm's warning: deskd hears of it, and the user sees it on the desktop.
    func warnOfTheEnd() {
        let text = TimeWarning.text(warnSeconds: spec.warnSeconds)
        reporter.send(JobReport(event: .warned, message: text))
        guard let displayNeeds, let account else { return }
        guard let program = DesktopEnvironment.find(TimeWarning.program) else {
            StandardError.say("xmessage (Debian's x11-utils) is not installed on \(node): the desktop cannot be told that its time is nearly up.")
            return
        }
        var environment = DesktopEnvironment(account: account, sessionID: spec.session).client(of: server, displayNeeds)
        // xmessage is an X program: on a Wayland desktop it reaches the screen through Xwayland.
        if display == nil, let directory, let xwayland = recordedXDisplay(in: directory) { environment.append("DISPLAY=\(xwayland)") }
        do {
            // Its own child, reaped like the rest; it ends with the display or its OK button.
            _ = try ChildProcess.spawn(TimeWarning.arguments(program: program, text: text), environment: environment,
                                       output: -1, directory: account.home, umask: 0o022)
        } catch {
            StandardError.say("could not show the time warning on the desktop: \(error).")
        }
    }
}

/// Why a desktop ends, as the `ending` report says it and as the job's exit status.
enum EndCause {
    case signal(Int32)
    case deskd
    case desktopEnded(ProcessEnd, lastLine: String?)
    case xvncEnded(ProcessEnd)

    var message: String {
        switch self {
        case .signal(SIGTERM): "the job got SIGTERM from Slurm (scancel, its time limit, or its node ending it)."
        case .signal(let number): "the job got signal \(number) (\(strsignal(number).map { String(cString: $0) } ?? "unknown"))."
        case .deskd: "deskd asked for the desktop's end."
        case .desktopEnded(.exited(status: 0), _): "the user logged out: the desktop's startup script ended."
        case .desktopEnded(let end, let lastLine): "the desktop's startup script \(end)" + (lastLine.map { "; its output ends: \($0)" } ?? "") + "."
        case .xvncEnded(let end): "Xvnc \(end), and the desktop cannot go on without it."
        }
    }

    /// 0 for an end that was asked for; 1 when something failed (Slurm then shows FAILED).
    var exitStatus: Int32 {
        switch self {
        case .signal, .deskd, .desktopEnded(.exited(status: 0), _): 0
        case .desktopEnded, .xvncEnded: 1
        }
    }
}
