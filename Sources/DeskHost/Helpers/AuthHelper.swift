import CDeskShims
import DeskLinux
import Glibc
import Synchronization

/// deskd-auth for one web login: PAM runs in that short-lived root process, never in deskd.
/// deskd writes answers to its stdin and reads its lines (prompts, messages, the outcome) from
/// its stdout, every text hex-encoded (see CDeskSession.h).
public final class AuthHelper: Sendable {
    /// What deskd-auth says.
    public enum Line: Sendable, Equatable {
        case prompt(String, echo: Bool)
        case info(String)
        case error(String)
        case succeeded
        /// PAM's code and its words (or the last module's).
        case refused(code: Int32, String)
    }

    public let pid: pid_t
    private let handles: Mutex<(pidfd: Int32, input: Int32, output: Int32)>
    /// Bytes read past the last line.
    private let pending = Mutex<[UInt8]>([])

    private init(pid: pid_t, pidfd: Int32, input: Int32, output: Int32) {
        self.pid = pid
        handles = Mutex((pidfd, input, output))
    }

    deinit {
        let (pidfd, input, output) = handles.withLock { $0 }
        Self.kill(pidfd)
        if input >= 0 { close(input) }
        if output >= 0 { close(output) }
    }

    /// SIGKILL, and the pidfd to the reaper, which waits for the end: reaping at once (WNOHANG)
    /// would find the helper still dying and leave it a zombie of deskd's, one per login.
    private static func kill(_ pidfd: Int32) {
        guard pidfd >= 0 else { return }
        _ = deskd_pidfd_send_signal(pidfd, SIGKILL)
        ExitMonitor.reaper.reap(pidfd: pidfd)
    }

    /// deskd-auth beside deskd, or in ../libexec/deskd.
    public static func locate() -> String? {
        Companion.locate("deskd-auth")
    }

    /// Starts it for `user` from `remoteHost` under PAM service `service`. The user name is a
    /// checked account name: never a secret, and safe on a command line.
    public static func start(program: String, service: String, user: String, remoteHost: String) throws(OSError) -> AuthHelper {
        let pipes = try HelperPipes.make(for: program)
        var pidfd: Int32 = -1
        let pid = [program, service, user, remoteHost].withCStringArray { argv in
            ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"].withCStringArray { envp in
                program.withCString { path in
                    var spec = deskd_spawn_spec(path: path, argv: argv, envp: envp, in_fd: pipes.childInput, out_fd: pipes.childOutput, err_fd: -1,
                                                cgroup_fd: -1, umask_value: 0o077, uid: uid_t.max, gid: gid_t.max, directory: nil, death_signal: 0)
                    return deskd_spawn_process_pidfd(&spec, &pidfd)
                }
            }
        }
        pipes.closeChildEnds()
        guard pid > 0, pidfd >= 0 else {
            let error = OSError("spawn", path: program)
            pipes.closeOwnEnds()
            throw error
        }
        return AuthHelper(pid: pid, pidfd: pidfd, input: pipes.toChild, output: pipes.fromChild)
    }

    /// The answer to its last prompt. The text is wiped from deskd's copy once written.
    public func answer(_ text: String) -> Bool {
        var line = Array("A ".utf8) + Self.hex(Array(text.utf8)) + [0x0A]
        defer { for index in line.indices { line[index] = 0 } }
        let fd = handles.withLock { $0.input }
        var written = 0
        while written < line.count {
            let n = line[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN {
                var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&entry, 1, 1000)
                continue
            }
            guard n > 0 else { return false }
            written += n
        }
        return true
    }

    /// Its next line, or nil if it said nothing more by `deadline` (or ended without a word).
    public func nextLine(until deadline: ContinuousClock.Instant) -> Line? {
        let fd = handles.withLock { $0.output }
        while true {
            if let line = pending.withLock({ buffer -> [UInt8]? in
                guard let newline = buffer.firstIndex(of: 0x0A) else { return nil }
                defer { buffer.removeSubrange(...newline) }
                return Array(buffer[..<newline])
            }) {
                return Self.parse(line)
            }
            let remaining = deadline - .now
            guard remaining > .zero else { return nil }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = remaining.pollMilliseconds(atMost: 60_000)
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard n > 0 else { return nil }
            let full = pending.withLock { buffer -> Bool in
                buffer += chunk[..<n]
                return buffer.count > 16 << 10
            }
            if full { return nil }
        }
    }

    /// Ends it now (a login abandoned, or one deskd is done with); safe to call twice.
    public func end() {
        let (pidfd, input, output) = handles.withLock { handles in
            defer { handles = (-1, -1, -1) }
            return handles
        }
        if input >= 0 { close(input) }
        if output >= 0 { close(output) }
        Self.kill(pidfd)
    }

    static func parse(_ line: [UInt8]) -> Line? {
        let text = String(decoding: line, as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        func decoded(_ index: Int) -> String { index < parts.count ? unhex(parts[index]) : "" }
        switch parts.first {
        case "P0": return .prompt(decoded(1), echo: false)
        case "P1": return .prompt(decoded(1), echo: true)
        case "I": return .info(decoded(1))
        case "E": return .error(decoded(1))
        case "OK": return .succeeded
        case "NO": return .refused(code: parts.count > 1 ? Int32(parts[1]) ?? -1 : -1, decoded(2))
        default: return nil
        }
    }

    static func hex(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }
    }

    static func unhex(_ text: String) -> String {
        var bytes: [UInt8] = []
        var high: UInt8?
        for c in text.utf8 {
            let value: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = c - UInt8(ascii: "a") + 10
            default: return String(decoding: bytes, as: UTF8.self)
            }
            if let h = high { bytes.append(h << 4 | value); high = nil } else { high = value }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
