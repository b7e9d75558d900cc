import CDeskShims
import DeskLinux
import DeskSessionProtocol
import Glibc

/// Starts a process as a user, the way deskd started session processes before deskd-session
/// (which now opens a PAM login first): today the benchmark's baseline, raw Xtigervnc, started
/// exactly as a session's would be but without a login. Supplementary groups, gid and uid dropped (by
/// setpriv), a session of their own, a clean environment, and inside the session's cgroup
/// from their very first instruction.
///
/// Not a spawn library: the child is created with clone3(CLONE_INTO_CGROUP), which puts it in
/// its cgroup atomically at creation, so not even a process forked in its first microsecond
/// escapes `kill`. No library offers that; without it a start needs a shell that waits to be
/// moved, which costs a shell, a round trip and milliseconds on every start.
public enum SessionLauncher {
    /// Drops to the user in a freshly exec'd, single-threaded process (util-linux, on every
    /// Linux host). Not setgroups()/setuid() in the forked child of this multi-threaded daemon:
    /// glibc's setxid broadcast there can wait forever for a thread that was being created at
    /// fork time (seen here: a start hung in __nptl_setxid).
    public static let setprivPath = "/usr/bin/setpriv"

    public struct Spec: Sendable {
        public var executable: String
        public var arguments: [String]
        public var account: UserAccount
        public var environment: [String: String]
        /// Where stdout and stderr go; the caller closes it after the launch.
        public var logFD: Int32
        public var cgroup: SessionCGroup?
        /// Xvnc runs with 077, so its RFB socket is the owner's from the instant it is bound
        /// (Xvnc chmods it to -rfbunixmode only after bind); the desktop gets a login's 022.
        public var umask: mode_t

        public init(executable: String, arguments: [String], account: UserAccount, environment: [String: String], logFD: Int32,
                    cgroup: SessionCGroup?, umask: mode_t = 0o022) {
            self.executable = executable
            self.arguments = arguments
            self.account = account
            self.environment = environment
            self.logFD = logFD
            self.cgroup = cgroup
            self.umask = umask
        }
    }

    static func credentialArguments(for account: UserAccount) -> [String] {
        let groups = account.groups.isEmpty
            ? ["--clear-groups"]
            : ["--groups", account.groups.map(String.init).joined(separator: ",")]
        return ["--reuid", String(account.uid), "--regid", String(account.gid)] + groups + ["--"]
    }

    /// The full argument vector: setpriv, the credentials, then the program and its arguments.
    static func argumentVector(_ spec: Spec) -> [String] {
        [setprivPath] + credentialArguments(for: spec.account) + [spec.executable] + spec.arguments
    }

    /// Launches and returns the pid once setpriv is exec'd. The process is deskd's child:
    /// ExitMonitor reaps it when it exits.
    public static func launch(_ spec: Spec) throws(OSError) -> pid_t {
        var cgroupFD: Int32 = -1
        if let cgroup = spec.cgroup {
            cgroupFD = open(cgroup.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard cgroupFD >= 0 else { throw OSError("open cgroup", path: cgroup.path) }
        }
        defer { if cgroupFD >= 0 { close(cgroupFD) } }
        let arguments = argumentVector(spec)
        let environment = spec.environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let pid = arguments.withCStringArray { argv in
            environment.withCStringArray { envp in deskd_spawn(setprivPath, argv, envp, spec.logFD, cgroupFD, spec.umask) }
        }
        guard pid > 0 else { throw OSError("spawn", path: spec.executable) }
        return pid
    }
}
