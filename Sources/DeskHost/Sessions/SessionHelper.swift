import CDeskShims
import DeskCore
import DeskLinux
import DeskSessionProtocol
import Glibc

/// deskd's side of `deskd-session`, the root process that holds one desktop's PAM session and
/// runs its processes (see Sources/deskd-session). deskd starts it with the spec on a pipe, then
/// reads what it says: whether the account may log in, Xvnc's pid, and later the desktop's.
public final class SessionHelper: Sendable {
    /// Where the helper is: beside deskd's own binary, or in ../libexec/deskd (make install).
    /// Both are where root put deskd itself; never a path a user could have written.
    public static func locate() -> String? {
        Companion.locate("deskd-session")
    }

    /// What deskd-session is to run, in deskd's terms; it travels as `message`.
    public struct Spec: Sendable {
        /// Whose desktop: its name, ids and home go to deskd-session, which checks them again.
        public let account: UserAccount
        /// The spec as it travels to deskd-session.
        public let message: SessionSpec
        /// The session's display; on the pipe it is its text (`:3`), the only place it is one.
        public let display: Display

        public var sessionID: String { message.sessionID }

        /// The environment is sorted by name, so the same spec is always the same bytes.
        public init(account: UserAccount, display: Display, sessionID: String, logDirectory: String, logLimit: Int, journal: Bool,
                    cgroup: SessionCGroup?, server: [String], serverUmask: mode_t, desktop: [String], sessionType: String = "x11",
                    xSocketDirectory: String? = nil, environment: [String: String]) {
            self.account = account
            self.display = display
            message = SessionSpec(
                user: account.name, uid: account.uid, gid: account.gid, home: account.home, display: display.description, sessionID: sessionID,
                logDirectory: logDirectory, logLimit: logLimit, journal: journal, cgroup: cgroup?.path, server: server,
                serverUmask: serverUmask, desktop: desktop, sessionType: sessionType, xSocketDirectory: xSocketDirectory, environment: environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        }
    }

    /// What the helper said about the start.
    public enum Start: Sendable, Equatable {
        /// The display server's pid.
        case server(pid_t)
        /// The account stack refused the login: PAM's status and a sentence for the caller.
        case refused(PAMRefusal)
        case failed(String)
        /// Another process holds the display: the next one is tried.
        case taken(String)
    }

    /// How a desktop's first moments went.
    public enum DesktopStart: Sendable, Equatable {
        /// It uses its display.
        case settled
        /// The time given ran out with the desktop running but not (yet) on its display.
        case stillStarting
        /// A session process ended first, as deskd-session recorded it.
        case ended(role: ProcessRole, how: ProcessEnd)
    }

    public let pid: pid_t
    private let commands: Int32
    private let replies: Int32

    private init(pid: pid_t, commands: Int32, replies: Int32) {
        self.pid = pid
        self.commands = commands
        self.replies = replies
    }

    deinit {
        close(commands)
        close(replies)
    }

    /// Starts the helper (in deskd's own cgroup, not the session's: it must outlive the
    /// session's processes to close the PAM session after them) and hands it the spec.
    public static func start(_ spec: Spec, helper: String, stderr: Int32) throws(OSError) -> SessionHelper {
        // A spec deskd-session would refuse is refused here, before there is a process to end.
        let bytes: [UInt8]
        do { bytes = try spec.message.encoded() } catch { throw OSError("encode the spec (\(error))", path: helper, errno: EINVAL) }
        let pipes = try HelperPipes.make(for: helper)
        let pid = [helper].withCStringArray { argv in
            [String]().withCStringArray { envp in
                helper.withCString { path in
                    var process = deskd_spawn_spec(
                        path: path, argv: argv, envp: envp, in_fd: pipes.childInput, out_fd: pipes.childOutput, err_fd: stderr,
                        cgroup_fd: -1, umask_value: 0o022, uid: uid_t.max, gid: gid_t.max, directory: nil, death_signal: 0)
                    return deskd_spawn_process(&process)
                }
            }
        }
        pipes.closeChildEnds()
        guard pid > 0 else {
            let error = OSError("spawn", path: helper)
            pipes.closeOwnEnds()
            throw error
        }
        let started = SessionHelper(pid: pid, commands: pipes.toChild, replies: pipes.fromChild)
        let written = bytes.withUnsafeBytes { buffer in retryingEINTR { write(pipes.toChild, buffer.baseAddress, buffer.count) } }
        guard written == bytes.count else {
            // Nothing watches it yet: end and reap it here, or it stays a zombie of deskd's.
            let error = OSError("write spec", path: helper)
            kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
            throw error
        }
        return started
    }

    /// Blocks until the helper says how the start went, or `deadline` passes.
    public func awaitStart(until deadline: ContinuousClock.Instant) -> Start {
        while let line = readLine(until: deadline) {
            switch SessionReply(line: line) {
            case .server(let pid): return .server(pid)
            case .refused(let refusal): return .refused(refusal)
            case .failed(let sentence): return .failed(sentence)
            case .taken(let sentence): return .taken(sentence)
            case .ok, .desktop, .exit, nil: continue
            }
        }
        return .failed("deskd-session said nothing within the start timeout")
    }

    /// Asks for the desktop and waits for its pid.
    public func startDesktop(until deadline: ContinuousClock.Instant) -> Result<pid_t, OSError> {
        let command = SessionCommand.desktop.encoded
        let written = command.withUnsafeBytes { buffer in retryingEINTR { write(commands, buffer.baseAddress, buffer.count) } }
        guard written == command.count else { return .failure(OSError("write", path: "deskd-session")) }
        while let line = readLine(until: deadline) {
            switch SessionReply(line: line) {
            case .desktop(let pid): return .success(pid)
            case .failed(let sentence): return .failure(OSError(sentence, path: "deskd-session", errno: EIO))
            // The server ended first: deskd-session starts no desktop then, and says nothing more of it.
            case .exit(.server, let end): return .failure(OSError("the display server \(end)", path: "deskd-session", errno: ESRCH))
            case .ok, .server, .refused, .taken, .exit, nil: continue
            }
        }
        return .failure(OSError("no answer", path: "deskd-session", errno: ETIMEDOUT))
    }

    /// Watches a desktop just started until `settled` says it is on its display, a session
    /// process ends (deskd-session says how), or `deadline`. `settled` is asked at once, then
    /// every millisecond for the first 32 (a desktop that opens its display itself does so
    /// within a few, and each millisecond of lag is the person's), then less and less often up
    /// to every 32 ms for a desktop with a long way to its display.
    public func awaitDesktop(until deadline: ContinuousClock.Instant, settled: () -> Bool) -> DesktopStart {
        let begun = ContinuousClock.now
        var pause: Int32 = 1
        while true {
            // An end already reported wins over a connection seen since: a desktop that opened
            // its display and died (a font error, another window manager) has not started.
            if let ended = pendingEnd(waiting: 0) { return ended }
            if settled() {
                return pendingEnd(waiting: 0) ?? .settled
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return pendingEnd(waiting: 0) ?? .stillStarting }
            let milliseconds = left.pollMilliseconds(atMost: Int64(pause))
            if ContinuousClock.now - begun > .milliseconds(32) { pause = min(pause * 2, 32) }
            if let ended = pendingEnd(waiting: milliseconds) { return ended }
        }
    }

    /// The first `exit` line the helper has written, waiting up to `milliseconds` for one to
    /// come; nil if none did. Other lines are passed over. deskd-session writes each line
    /// whole, so a readable pipe holds at least one.
    private func pendingEnd(waiting milliseconds: Int32) -> DesktopStart? {
        var entry = pollfd(fd: replies, events: Int16(POLLIN), revents: 0)
        while poll(&entry, 1, milliseconds) > 0 {
            guard let line = readLine(until: .now + .milliseconds(100)) else {
                // The helper's end of the pipe is closed (it died): nothing more will come.
                usleep(useconds_t(max(milliseconds, 1)) * 1000)
                return nil
            }
            if case .exit(let role, let end) = SessionReply(line: line) { return .ended(role: role, how: end) }
            entry.revents = 0
        }
        return nil
    }

    /// One line from the helper, or nil at its end or the deadline.
    private func readLine(until deadline: ContinuousClock.Instant) -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var entry = pollfd(fd: replies, events: Int16(POLLIN), revents: 0)
            let milliseconds = left.pollMilliseconds(atMost: 60_000)
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let n = read(replies, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            if line.count < 4096 { line.append(byte) }
        }
    }
}
