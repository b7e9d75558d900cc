import CDeskSession
import CDeskShims
import DeskSessionProtocol
import Glibc

/// Runs the session's processes and waits for the last of them: starts Xvnc at once and the
/// desktop when deskd says `desktop` on stdin, keeps their output, records how each ended, and
/// on SIGTERM (or `stop`) ends them, SIGKILL following 10 s later. As a child subreaper it
/// inherits every orphan of the session, so "no child left" means the session is over.
///
/// A reaped process's pid is free for the next process on the host, the session owner's or
/// root's, and a session can go on for days after its desktop was reaped here. So a child is
/// signalled only through a pidfd made with it, which reaches that process or none, and the
/// pidfd is closed when the child is reaped; orphans are never signalled by pid at all (the
/// session's cgroup ends them).
final class Supervisor {
    let spec: SessionSpec
    let environment: [String]
    let cgroupFD: Int32
    let signals: Int32

    /// A session process this supervisor started, and the pipe its output comes through.
    struct Child {
        let role: ProcessRole
        let pid: pid_t
        /// The process itself rather than its number: every signal to it goes through this.
        /// -1 once it is reaped.
        var pidfd: Int32
        var output: Int32
        let log: OutputLog
    }

    private var children: [Child] = []
    private var commandsOpen = true
    private var serverEnded = false
    private var desktopStarted = false
    private var killDeadline: Double?
    private var command: [UInt8] = []

    init(spec: SessionSpec, environment: [String], cgroupFD: Int32, signals: Int32) {
        self.spec = spec
        self.environment = environment
        self.cgroupFD = cgroupFD
        self.signals = signals
    }

    func run() {
        guard let server = launch(.server, spec.server, umask: spec.serverUmask) else {
            record(.server, .notStarted)
            report(.failed("could not start \(spec.server[0]): \(String(cString: strerror(errno)))."))
            return
        }
        report(.server(server.pid))
        children.append(server)

        while true {
            var fds = [pollfd(fd: signals, events: Int16(POLLIN), revents: 0)]
            let listening = commandsOpen
            if listening { fds.append(pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)) }
            let outputs = children.indices.filter { children[$0].output >= 0 }
            fds += outputs.map { pollfd(fd: children[$0].output, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), killDeadline == nil ? -1 : 500)
            if ready < 0 && errno != EINTR { break }

            if let deadline = killDeadline, Self.now() > deadline { killEverything() }
            for (offset, index) in outputs.enumerated() where fds[(listening ? 2 : 1) + offset].revents != 0 {
                drain(index)
            }
            if listening, fds[1].revents != 0 { readCommand() }
            if fds[0].revents != 0 {
                while case let signal = deskd_read_signal(signals), signal > 0 {
                    if signal != SIGCHLD { endSession() }
                }
                if !reapChildren() { break }   // no child left: every session process has ended
            }
        }
        // What is still in the pipes (a process that passed its stdout on may yet hold one).
        for index in children.indices where children[index].output >= 0 { drain(index) }
    }

    private func readCommand() {
        var byte: UInt8 = 0
        let n = read(STDIN_FILENO, &byte, 1)
        if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
        guard n == 1 else {
            commandsOpen = false   // deskd went away (a restart): the desktop goes on as it is
            return
        }
        guard byte == UInt8(ascii: "\n") else {
            if command.count < 64 { command.append(byte) }
            return
        }
        let line = String(decoding: command, as: UTF8.self)
        command.removeAll()
        switch SessionCommand(line: line) {
        case .desktop where !desktopStarted && !serverEnded:
            desktopStarted = true
            if let desktop = launch(.desktop, spec.desktop, umask: 0o022) {
                children.append(desktop)
                report(.desktop(desktop.pid))
            } else {
                record(.desktop, .notStarted)
                report(.failed("could not start the desktop: \(String(cString: strerror(errno)))."))
            }
        case .stop:
            endSession()
        case .desktop, nil:
            break
        }
    }

    /// The display server of a desktop whose X socket name this process holds dies with it
    /// (PR_SET_PDEATHSIG): without the holder, anyone could bind the name and play the X
    /// server to the owner's programs (issue 48). The desktop follows its display.
    private func launch(_ role: ProcessRole, _ argv: [String], umask: mode_t) -> Child? {
        var fds: [Int32] = [-1, -1]
        guard deskd_pipe_cloexec_nonblock(&fds) == 0 else { return nil }
        // Only deskd-session's end polls; the process's stdout must block as any stdout does, or
        // a desktop writing faster than the log keeps up gets EAGAIN and dies of it.
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) & ~O_NONBLOCK)
        let name = role.word(former: spec.speaksFormerWords)
        let log = OutputLog(path: spec.logDirectory + "/\(name).log", limit: spec.logLimit,
                            journalPrefix: spec.journal ? "[\(spec.sessionID) \(spec.display) \(name)] " : nil)
        var pidfd: Int32 = -1
        let pid = argv.withCStringArray { argvPointer in
            environment.withCStringArray { envp in
                spec.home.withCString { home in
                    argv[0].withCString { path in
                        var process = deskd_spawn_spec(
                            path: path, argv: argvPointer, envp: envp, in_fd: -1, out_fd: fds[1], err_fd: -1,
                            cgroup_fd: cgroupFD, umask_value: umask, uid: spec.uid, gid: spec.gid, directory: home,
                            death_signal: role == .server && spec.xSocketDirectory != nil ? SIGKILL : 0)
                        return deskd_spawn_process_pidfd(&process, &pidfd)
                    }
                }
            }
        }
        let spawnError = errno
        close(fds[1])
        guard pid > 0 else {
            log.append(ArraySlice(Array("deskd-session: could not start \(argv[0]): \(String(cString: strerror(spawnError)))\n".utf8)))
            close(fds[0])
            errno = spawnError
            return nil
        }
        return Child(role: role, pid: pid, pidfd: pidfd, output: fds[0], log: log)
    }

    private func drain(_ index: Int) {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while children[index].output >= 0 {
            let n = buffer.withUnsafeMutableBytes { read(children[index].output, $0.baseAddress, $0.count) }
            if n > 0 { children[index].log.append(buffer[0..<n]); continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN { return }
            close(children[index].output)
            children[index].output = -1
        }
    }

    /// Reaps every child that has ended; false once there is none left at all.
    private func reapChildren() -> Bool {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            if pid == 0 { return true }
            if pid < 0 { return errno != ECHILD }
            // Only a child not reaped before: an orphan inherited since may have been given the
            // number of one that was, and its end is not that child's.
            if let index = children.firstIndex(where: { $0.pid == pid && $0.pidfd >= 0 }) {
                close(children[index].pidfd)
                children[index].pidfd = -1
                record(children[index].role, ProcessEnd(waitStatus: status))
                if children[index].role == .server { serverEnded = true }
            }
        }
    }

    private func endSession() {
        signalChildren(SIGTERM)
        if killDeadline == nil { killDeadline = Self.now() + 10 }
    }

    /// The session did not end on SIGTERM: everything in its cgroup goes (or, without one, every child).
    private func killEverything() {
        if let cgroup = spec.cgroup {
            let fd = open(cgroup + "/cgroup.kill", O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                _ = write(fd, "1", 1)
                close(fd)
            }
        }
        signalChildren(SIGKILL)
        killDeadline = Self.now() + 10
    }

    /// `signal` to every child not yet reaped, through its pidfd. One that has exited but is
    /// not reaped yet still holds its pid, and its pidfd reaches it alone; a reaped one has no
    /// pidfd left, and its pid may be anyone's.
    private func signalChildren(_ signal: Int32) {
        for child in children where child.pidfd >= 0 { _ = deskd_pidfd_send_signal(child.pidfd, signal) }
    }

    /// Writes how `role` ended beside its log, and tells deskd.
    private func record(_ role: ProcessRole, _ end: ProcessEnd) {
        let path = spec.logDirectory + "/\(role.word(former: spec.speaksFormerWords)).exit"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 {
            let bytes = Array((end.description + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        report(.exit(role, end))
    }

    private static func now() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
