import CDeskShims
import Glibc

/// deskd's side of `deskd-session`, the root process that holds one desktop's PAM session and
/// runs its processes (see Sources/deskd-session). deskd starts it with the spec on a pipe, then
/// reads what it says: whether the account may log in, Xvnc's pid, and later the desktop's.
public final class SessionHelper: Sendable {
    /// Where the helper is: beside deskd's own binary, or in ../libexec/deskd (make install).
    /// Both are where root put deskd itself; never a path a user could have written.
    public static func locate() -> String? {
        guard let deskd = ProcFS.executable(of: getpid()) else { return nil }
        let directory = String(deskd[..<(deskd.lastIndex(of: "/") ?? deskd.startIndex)])
        let parent = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
        return [directory + "/deskd-session", parent + "/libexec/deskd/deskd-session"].first { access($0, X_OK) == 0 }
    }

    public struct Spec: Sendable {
        public var account: UserAccount
        public var display: String
        public var sessionID: String
        public var logDirectory: String
        public var logLimit: Int
        public var journal: Bool
        public var cgroup: SessionCGroup?
        public var xvnc: [String]
        public var xvncUmask: mode_t
        public var desktop: [String]
        public var environment: [String: String]

        public init(account: UserAccount, display: String, sessionID: String, logDirectory: String, logLimit: Int, journal: Bool,
                    cgroup: SessionCGroup?, xvnc: [String], xvncUmask: mode_t, desktop: [String], environment: [String: String]) {
            self.account = account
            self.display = display
            self.sessionID = sessionID
            self.logDirectory = logDirectory
            self.logLimit = logLimit
            self.journal = journal
            self.cgroup = cgroup
            self.xvnc = xvnc
            self.xvncUmask = xvncUmask
            self.desktop = desktop
            self.environment = environment
        }

        /// NUL-separated keys and values, ended by `start` (what deskd-session reads); nil if a
        /// value holds a NUL, which would end its field early and make the rest a key of its own.
        var encoded: [UInt8]? {
            var fields: [(String, String)] = [
                ("user", account.name), ("uid", String(account.uid)), ("gid", String(account.gid)), ("home", account.home),
                ("display", display), ("session-id", sessionID), ("log-directory", logDirectory),
                ("log-limit", String(logLimit)), ("journal", journal ? "1" : "0"), ("xvnc-umask", String(xvncUmask, radix: 8)),
            ]
            if let cgroup { fields.append(("cgroup", cgroup.path)) }
            fields += xvnc.map { ("xvnc", $0) } + desktop.map { ("desktop", $0) }
            fields += environment.sorted { $0.key < $1.key }.map { ("env", "\($0.key)=\($0.value)") }
            var bytes: [UInt8] = []
            for (key, value) in fields {
                guard !value.utf8.contains(0) else { return nil }
                bytes += Array(key.utf8) + [0] + Array(value.utf8) + [0]
            }
            return bytes + Array("start".utf8) + [0]
        }
    }

    /// What the helper said about the start.
    public enum Start: Sendable, Equatable {
        case xvnc(pid_t)
        /// The account stack refused the login: a sentence for the caller.
        case refused(String)
        case failed(String)
    }

    /// How a desktop's first moments went.
    public enum DesktopStart: Sendable, Equatable {
        /// It uses its display.
        case settled
        /// The time given ran out with the desktop running but not (yet) on its display.
        case stillStarting
        /// A session process ended first: `role` is "desktop" or "xvnc", `how` as deskd-session
        /// records it ("exited with status 127", "killed by signal 11 (Segmentation fault)").
        case ended(role: String, how: String)
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
        guard let bytes = spec.encoded else { throw OSError("encode the spec (a field holds a NUL)", path: helper, errno: EINVAL) }
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1]
        guard deskd_pipe_cloexec_nonblock(&input) == 0 else { throw OSError("pipe", path: helper) }
        guard deskd_pipe_cloexec_nonblock(&output) == 0 else { close(input[0]); close(input[1]); throw OSError("pipe", path: helper) }
        // The helper's ends block, as a process's stdin and stdout are expected to.
        for fd in [input[0], output[1]] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        // Descriptors 0-2 are the child's to be given; keep ours above them.
        input = input.map(deskd_above_stdio)
        output = output.map(deskd_above_stdio)
        let pid = [helper].withCStringArray { argv in
            [String]().withCStringArray { envp in
                helper.withCString { path in
                    var process = deskd_spawn_spec(
                        path: path, argv: argv, envp: envp, in_fd: input[0], out_fd: output[1], err_fd: stderr,
                        cgroup_fd: -1, umask_value: 0o022, uid: uid_t.max, gid: gid_t.max, directory: nil)
                    return deskd_spawn_process(&process)
                }
            }
        }
        close(input[0])
        close(output[1])
        guard pid > 0 else {
            let error = OSError("spawn", path: helper)
            close(input[1]); close(output[0])
            throw error
        }
        let started = SessionHelper(pid: pid, commands: input[1], replies: output[0])
        let written = bytes.withUnsafeBytes { buffer in retryingEINTR { write(input[1], buffer.baseAddress, buffer.count) } }
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
            let (word, rest) = Self.split(line)
            switch word {
            case "ok": continue
            case "xvnc": if let pid = pid_t(rest) { return .xvnc(pid) }
            case "refused": return .refused(rest)
            case "failed": return .failed(rest)
            default: continue
            }
        }
        return .failed("deskd-session said nothing within the start timeout")
    }

    /// Asks for the desktop and waits for its pid.
    public func startDesktop(until deadline: ContinuousClock.Instant) -> Result<pid_t, OSError> {
        let command = Array("desktop\n".utf8)
        let written = command.withUnsafeBytes { buffer in retryingEINTR { write(commands, buffer.baseAddress, buffer.count) } }
        guard written == command.count else { return .failure(OSError("write", path: "deskd-session")) }
        while let line = readLine(until: deadline) {
            let (word, rest) = Self.split(line)
            if word == "desktop", let pid = pid_t(rest) { return .success(pid) }
            if word == "failed" { return .failure(OSError(rest, path: "deskd-session", errno: EIO)) }
            // Xvnc ended first: deskd-session starts no desktop then, and says nothing more of it.
            if word == "exit", Self.split(rest).0 == "xvnc" { return .failure(OSError("Xtigervnc \(Self.split(rest).1)", path: "deskd-session", errno: ESRCH)) }
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
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, Int64(pause)))
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
            let (word, rest) = Self.split(line)
            if word == "exit" {
                let (role, how) = Self.split(rest)
                return .ended(role: role, how: how)
            }
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
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
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

    private static func split(_ line: String) -> (String, String) {
        guard let space = line.firstIndex(of: " ") else { return (line, "") }
        return (String(line[..<space]), String(line[line.index(after: space)...]))
    }
}
