import Glibc
import Subprocess
import SystemPackage

/// How a process exited.
public enum ProcessExit: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)
    /// Never started (spawn failed) or lost track of.
    case unknown

    public var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signalled(let signal): "was killed by signal \(signal)"
        case .unknown: "ended"
        }
    }
}

/// A process deskd launched, with a task that finishes when it exits.
public struct LaunchedProcess: Sendable {
    public let pid: pid_t
    /// Resolves when the process ends. Never cancel it: cancelling tears the process down.
    public let exit: Task<ProcessExit, Never>
}

/// Starts session processes as their user: supplementary groups, gid and uid dropped (by
/// setpriv), a session of their own, a clean environment, and inside the session's cgroup
/// before the user's code runs.
public enum SessionLauncher {
    /// The child starts as `sh`, waits for one line on stdin, then execs the real program.
    /// That pause is what lets the daemon move it into the session cgroup before it can fork,
    /// so not even a process forked in the first microsecond escapes `kill`.
    static let gate = #"read -r _ || exit 70; cd "$HOME" 2>/dev/null || cd /; exec "$@" </dev/null >&2"#

    public struct Spec: Sendable {
        public var executable: String
        public var arguments: [String]
        public var account: UserAccount
        public var environment: [String: String]
        /// Where stdout and stderr go; closed in the daemon once the child has it.
        public var logFD: Int32
        public var cgroup: SessionCGroup?

        public init(executable: String, arguments: [String], account: UserAccount, environment: [String: String], logFD: Int32, cgroup: SessionCGroup?) {
            self.executable = executable
            self.arguments = arguments
            self.account = account
            self.environment = environment
            self.logFD = logFD
            self.cgroup = cgroup
        }
    }

    /// Drops to the user in a freshly exec'd, single-threaded process.
    ///
    /// Not Subprocess's own userID/groupID/supplementaryGroups: those call glibc's setgroups()
    /// in the forked child of this multi-threaded daemon, and glibc's setxid broadcast there
    /// waits forever for any thread that was being created at fork time (seen here: a start
    /// hung in __nptl_setxid). setpriv (util-linux, on every Linux host) has no such threads.
    public static let setprivPath = "/usr/bin/setpriv"

    static func credentialArguments(for account: UserAccount) -> [String] {
        let groups = account.groups.isEmpty
            ? ["--clear-groups"]
            : ["--groups", account.groups.map(String.init).joined(separator: ",")]
        return ["--reuid", String(account.uid), "--regid", String(account.gid)] + groups + ["--"]
    }

    /// Launches and returns as soon as the process runs; `exit` tracks it afterwards.
    public static func launch(_ spec: Spec) async throws -> LaunchedProcess {
        var options = PlatformOptions()
        // A session of its own, so no terminal or process-group signal aimed at deskd reaches it.
        options.createSession = true

        var environment: [Environment.Key: String] = [:]
        for (key, value) in spec.environment { environment[Environment.Key(stringLiteral: key)] = value }

        let (started, startedContinuation) = AsyncStream.makeStream(of: Result<pid_t, any Error>.self)
        let exit = Task<ProcessExit, Never> {
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(setprivPath)),
                    arguments: Arguments(credentialArguments(for: spec.account) + ["/bin/sh", "-c", gate, "deskd-session", spec.executable] + spec.arguments),
                    environment: .custom(environment),
                    workingDirectory: FilePath("/"),
                    platformOptions: options,
                    input: .inputWriter,
                    output: .fileDescriptor(FileDescriptor(rawValue: spec.logFD), closeAfterSpawningProcess: true),
                    error: .combinedWithOutput
                ) { execution in
                    let pid = execution.processIdentifier.value
                    var placed: (any Error)?
                    do { try spec.cgroup?.add(pid) } catch { placed = error }
                    if let placed {
                        // Without its cgroup the session could not be killed cleanly: do not start it.
                        kill(pid, SIGKILL)
                        startedContinuation.yield(.failure(placed))
                    } else {
                        _ = try await execution.standardInputWriter.write("go\n")
                        try await execution.standardInputWriter.finish()
                        startedContinuation.yield(.success(pid))
                    }
                    startedContinuation.finish()
                }
                switch result.terminationStatus {
                case .exited(let code): return .exited(code)
                case .signaled(let signal): return .signalled(signal)
                }
            } catch {
                startedContinuation.yield(.failure(error))
                startedContinuation.finish()
                return .unknown
            }
        }
        for await outcome in started {
            return LaunchedProcess(pid: try outcome.get(), exit: exit)
        }
        throw OSError("spawn", path: spec.executable, errno: ECHILD)
    }
}
