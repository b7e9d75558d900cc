import CDeskShims
import DeskLinux
import DeskSessionProtocol
import Glibc

/// Runs a program to its end and collects what it printed: for the scheduler's commands (sbatch,
/// squeue, scancel), which deskd runs as the user through runuser, or as itself. Arguments go to
/// the program as they are, never through a shell; what goes to its stdin is written whole.
public enum CommandRunner {
    public struct Outcome: Sendable, Equatable {
        /// The exit status; nil if it was killed by a signal or ran past its deadline.
        public var status: Int32?
        public var output: String
        public var errors: String
        public var timedOut: Bool
    }

    /// The most kept of each stream: the scheduler's answers are a line or a few thousand.
    static let maxOutputBytes = 1 << 20

    /// `program` with `arguments` (argv[0] is the program), `input` on its stdin, an environment
    /// of exactly `environment`; killed after `timeout`. nil if it could not be started.
    public static func run(_ program: String, _ arguments: [String], input: [UInt8] = [], environment: [String],
                           timeout: Duration) -> Outcome? {
        var stdinPipe: [Int32] = [-1, -1], stdoutPipe: [Int32] = [-1, -1], stderrPipe: [Int32] = [-1, -1]
        guard deskd_pipe_cloexec_nonblock(&stdinPipe) == 0 else { return nil }
        guard deskd_pipe_cloexec_nonblock(&stdoutPipe) == 0 else { closeAll(stdinPipe); return nil }
        guard deskd_pipe_cloexec_nonblock(&stderrPipe) == 0 else { closeAll(stdinPipe + stdoutPipe); return nil }
        // The program's ends block, as a program expects of its stdio; deskd's ends stay non-blocking.
        for fd in [stdinPipe[0], stdoutPipe[1], stderrPipe[1]] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A default signal mask and dispositions: deskd blocks signals its threads wait for.
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let spawned = ([program] + arguments).withCStringArray { argv in
            environment.withCStringArray { envp in posix_spawn(&pid, program, &actions, &attributes, argv, envp) }
        }
        closeAll([stdinPipe[0], stdoutPipe[1], stderrPipe[1]])
        guard spawned == 0 else {
            closeAll([stdinPipe[1], stdoutPipe[0], stderrPipe[0]])
            return nil
        }
        let deadline = ContinuousClock.now + timeout
        var pending = input[...]
        var writer: Int32 = stdinPipe[1]
        if pending.isEmpty { close(writer); writer = -1 }
        var readers = [stdoutPipe[0], stderrPipe[0]]
        var collected: [[UInt8]] = [[], []]
        var timedOut = false
        while readers.contains(where: { $0 >= 0 }) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { timedOut = true; break }
            var fds = readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            fds.append(pollfd(fd: writer, events: Int16(POLLOUT), revents: 0))
            let milliseconds = max(1, Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            for index in 0..<2 where readers[index] >= 0 && fds[index].revents != 0 {
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = read(readers[index], &buffer, buffer.count)
                if n > 0 {
                    if collected[index].count < maxOutputBytes { collected[index] += buffer[..<n] }
                } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                    close(readers[index])
                    readers[index] = -1
                }
            }
            if writer >= 0 && fds[2].revents != 0 {
                let n = pending.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
                if n > 0 { pending = pending.dropFirst(n) }
                if pending.isEmpty || (n < 0 && errno != EAGAIN && errno != EINTR) {
                    close(writer)
                    writer = -1
                }
            }
        }
        closeAll(readers.filter { $0 >= 0 } + (writer >= 0 ? [writer] : []))
        if timedOut { kill(pid, SIGKILL) }
        var status: Int32 = 0
        var waited: pid_t
        repeat { waited = waitpid(pid, &status, 0) } while waited < 0 && errno == EINTR
        // A wait that found no child reports no status: never read as "exited 0".
        let exited = waited == pid && status & 0x7f == 0
        return Outcome(status: exited && !timedOut ? (status >> 8) & 0xff : nil,
                       output: String(decoding: collected[0], as: UTF8.self), errors: String(decoding: collected[1], as: UTF8.self),
                       timedOut: timedOut)
    }

    private static func closeAll(_ fds: [Int32]) {
        for fd in fds where fd >= 0 { close(fd) }
    }
}
