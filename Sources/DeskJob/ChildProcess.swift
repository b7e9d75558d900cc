import CDeskShims
import DeskCore
import DeskLinux
import DeskSessionProtocol
import Glibc

/// A process the job started itself: Xvnc, the desktop's script, xmessage. Each runs in a
/// session of its own (setsid), with stdin from /dev/null, no descriptor of the job's but its
/// output, and an empty signal mask (deskd_spawn_process).
///
/// Signals go through a pidfd made with the process: until the job reaps it, its pid cannot be
/// reused anyway, but the pidfd also keeps a late signal from reaching whoever has the number
/// after the reap.
final class ChildProcess {
    let pid: pid_t
    private var pidfd: Int32
    /// How it ended, once reaped.
    private(set) var end: ProcessEnd?

    private init(pid: pid_t, pidfd: Int32) {
        self.pid = pid
        self.pidfd = pidfd
    }

    /// One the job lets go of before it is reaped (an xmessage warning) keeps no descriptor:
    /// the job's waitpid(-1) reaps it all the same.
    deinit {
        if pidfd >= 0 { close(pidfd) }
    }

    /// Starts `argv[0]` (an absolute path) with exactly `environment`, in `directory` (or / if
    /// it cannot be entered), its stdout and stderr to `output` (-1: /dev/null).
    static func spawn(_ argv: [String], environment: [String], output: Int32, directory: String, umask: mode_t) throws(OSError) -> ChildProcess {
        var pidfd: Int32 = -1
        let pid = argv.withCStringArray { argvPointer in
            environment.withCStringArray { envp in
                directory.withCString { directory in
                    argv[0].withCString { path in
                        var process = deskd_spawn_spec(
                            path: path, argv: argvPointer, envp: envp, in_fd: -1, out_fd: output, err_fd: -1,
                            cgroup_fd: -1, umask_value: umask, uid: uid_t.max, gid: gid_t.max, directory: directory, death_signal: 0)
                        return deskd_spawn_process_pidfd(&process, &pidfd)
                    }
                }
            }
        }
        guard pid > 0 else { throw OSError("exec", path: argv[0]) }
        return ChildProcess(pid: pid, pidfd: pidfd)
    }

    var hasEnded: Bool { end != nil }

    func signal(_ number: Int32) {
        if pidfd >= 0 { _ = deskd_pidfd_send_signal(pidfd, number) }
    }

    /// Records the end that waitpid reported for this pid; the pidfd goes with it.
    func reaped(status: Int32) {
        end = ProcessEnd(waitStatus: status)
        if pidfd >= 0 { close(pidfd) }
        pidfd = -1
    }
}

/// A child's output on its way to a log file in the job's directory: through a pipe the main
/// thread drains, so that the file stops growing at `limit` (a chatty desktop running for days
/// must not fill the node's /tmp) while the child never blocks on a full pipe. The last few
/// kilobytes stay in memory for the sentence that explains a failure.
final class OutputLog {
    static let limit = 16 << 20
    static let recentLimit = 4096

    /// The job's end, polled; -1 once the child and everything it started have closed theirs.
    private(set) var readFD: Int32
    /// The child's end: handed to spawn, then closed here.
    private(set) var writeFD: Int32
    private let file: Int32
    private var written = 0
    private(set) var recent: [UInt8] = []

    init?(file: Int32) {
        var fds: [Int32] = [-1, -1]
        guard deskd_pipe_cloexec_nonblock(&fds) == 0 else { return nil }
        // The child's stdout must block as any stdout does, or a fast writer gets EAGAIN and dies of it.
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) & ~O_NONBLOCK)
        readFD = fds[0]
        writeFD = fds[1]
        self.file = file
    }

    deinit {
        if readFD >= 0 { close(readFD) }
        if writeFD >= 0 { close(writeFD) }
        if file >= 0 { close(file) }
    }

    /// After the spawn: only the child (and what it starts) holds the writing end now, so the
    /// pipe ends when they are all gone.
    func childStarted() {
        if writeFD >= 0 { close(writeFD) }
        writeFD = -1
    }

    /// Reads what is there, without waiting.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while readFD >= 0 {
            let n = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN { return }
            guard n > 0 else {
                close(readFD)
                readFD = -1
                return
            }
            keep(buffer[0..<n])
        }
    }

    private func keep(_ bytes: ArraySlice<UInt8>) {
        recent += bytes
        if recent.count > Self.recentLimit { recent.removeFirst(recent.count - Self.recentLimit) }
        guard file >= 0, written < Self.limit else { return }
        var chunk = bytes.prefix(Self.limit - written)
        written += chunk.count
        if written >= Self.limit { chunk += "\n[deskd-job: this log stops here, at \(Self.limit >> 20) MiB]\n".utf8 }
        _ = chunk.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
    }

    /// The last line with something in it, for a sentence (at most 300 bytes of it).
    var lastLine: String? {
        guard let line = recentLines.lazy.map({ $0.trimming() }).last(where: { !$0.isEmpty }) else { return nil }
        return line.utf8.count <= 300 ? line : String(decoding: line.utf8.prefix(300), as: UTF8.self) + "…"
    }

    /// The lines kept of what was read (the last few KiB), for the display server to read.
    var recentLines: [String] {
        recent.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    }
}
