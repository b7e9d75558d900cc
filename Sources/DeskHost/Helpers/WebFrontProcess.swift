import CDeskShims
import DeskLinux
import Glibc
import Synchronization

/// deskd-web started by deskd itself (where no service manager starts it: the build tree, the
/// tests, scripts/demo): through setpriv, as the front's account with no supplementary groups,
/// no_new_privs, and no capability in any set, so nothing it runs can gain one.
public final class WebFrontProcess: Sendable {
    public let pid: pid_t
    /// A pidfd of it, made with it: its number is never mistaken for another process's. -1 once
    /// closed, so a late signal never reaches a descriptor that number has since become.
    private let pidfd: Mutex<Int32>

    init(pid: pid_t, pidfd: Int32) {
        self.pid = pid
        self.pidfd = Mutex(pidfd)
    }

    /// deskd-web beside deskd, or in ../libexec/deskd.
    public static func locate() -> String? {
        Companion.locate("deskd-web")
    }

    /// setpriv's arguments: the account, none of its groups, no privilege now or later.
    static func arguments(program: String, socket: String, account: UserAccount, logLevel: String) -> [String] {
        [SessionLauncher.setprivPath, "--reuid", String(account.uid), "--regid", String(account.gid), "--clear-groups",
         "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--",
         program, "--socket", socket, "--log-level", logLevel]
    }

    /// Starts it with stdout and stderr to `output` (deskd's own: the journal, or its log).
    public static func spawn(program: String, socket: String, account: UserAccount, logLevel: String, output: Int32) throws(OSError) -> WebFrontProcess {
        let argv = arguments(program: program, socket: socket, account: account, logLevel: logLevel)
        // A clean environment: nothing of root's reaches the front.
        let envp = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "LANG=C.UTF-8"]
        var pidfd: Int32 = -1
        let pid = argv.withCStringArray { argv in
            envp.withCStringArray { envp in
                SessionLauncher.setprivPath.withCString { path in
                    var spec = deskd_spawn_spec(path: path, argv: argv, envp: envp, in_fd: -1, out_fd: output, err_fd: output,
                                                cgroup_fd: -1, umask_value: 0o077, uid: uid_t.max, gid: gid_t.max, directory: nil, death_signal: 0)
                    return deskd_spawn_process_pidfd(&spec, &pidfd)
                }
            }
        }
        guard pid > 0, pidfd >= 0 else { throw OSError("spawn", path: program) }
        return WebFrontProcess(pid: pid, pidfd: pidfd)
    }

    /// Blocks until it has exited (or `timeout` passes: false), and reaps it once it has.
    /// Only one thread waits at a time; the handle stays open until `closeHandle`.
    public func waitForExit(timeout: Int32 = -1) -> Bool {
        let fd = pidfd.withLock { $0 }
        guard fd >= 0 else { return true }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, timeout)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return false }
            deskd_reap_pidfd(fd)
            return true
        }
    }

    public func signal(_ signal: Int32) {
        pidfd.withLock { fd in
            if fd >= 0 { _ = deskd_pidfd_send_signal(fd, signal) }
        }
    }

    /// deskd is done with it. The pidfd goes to the reaper rather than being closed: a front
    /// not yet reaped (a wait that failed, a stop that did not wait) is reaped once it ends,
    /// never left a zombie; one reaped already costs the reaper one look.
    public func closeHandle() {
        pidfd.withLock { fd in
            ExitMonitor.reaper.reap(pidfd: fd)
            fd = -1
        }
    }
}
