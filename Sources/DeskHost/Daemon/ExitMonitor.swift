import CDeskShims
import DeskLinux
import Glibc
import Synchronization

/// Tells deskd within milliseconds that a process has exited, whether or not it is deskd's child
/// (and reaps it if it is):
/// one thread polls a pidfd per watched process. Re-adopted sessions (children of init after a
/// daemon restart) are watched exactly like fresh ones.
public final class ExitMonitor: Sendable {
    private let wakeWrite: Int32
    private let watched = Watched()

    /// pidfd → what to call when it becomes readable; shared with the monitor thread.
    private final class Watched: Sendable {
        let callbacks = Mutex<[Int32: @Sendable () -> Void]>([:])
        /// Processes to watch whose pidfd could not be opened yet.
        let pending = Mutex<[(pid: pid_t, onExit: @Sendable () -> Void)]>([])

        /// Opens what it can of `pending`; whether any is left.
        func openPending() -> Bool {
            let waiting = pending.withLock { list in
                defer { list.removeAll() }
                return list
            }
            guard !waiting.isEmpty else { return false }
            var still: [(pid: pid_t, onExit: @Sendable () -> Void)] = []
            for entry in waiting {
                let fd = deskd_pidfd_open(entry.pid)
                if fd >= 0 { callbacks.withLock { $0[fd] = entry.onExit } } else if errno == ESRCH { entry.onExit() } else { still.append(entry) }
            }
            pending.withLock { $0 += still }
            return !still.isEmpty
        }
    }

    /// The process-wide monitor for children that only need reaping (a helper SIGKILLed once
    /// deskd is done with it): made on first use, so a process that never hands one over runs
    /// no thread for it.
    public static let reaper = ExitMonitor()

    public init() {
        var fds: [Int32] = [-1, -1]
        deskd_pipe_cloexec_nonblock(&fds)
        wakeWrite = fds[1]
        let wakeRead = fds[0]
        let started = DetachedThread.start(name: "deskd-exits") { [watched] in Self.run(wakeRead: wakeRead, watched: watched) }
        // Without it no exit would ever be noticed: better not to start than to run blind.
        precondition(started, "deskd could not start its exit-monitor thread; raise the task limit (TasksMax, ulimit -u) and start it again.")
    }

    /// Calls `onExit` once when `pid` exits — at once if it is already gone. Where no pidfd can
    /// be had for the moment (EMFILE, ENOMEM), the monitor asks again until it can: calling
    /// `onExit` then would end a live session, and leave a child of deskd's unreaped.
    public func watch(_ pid: pid_t, onExit: @escaping @Sendable () -> Void) {
        let fd = deskd_pidfd_open(pid)
        if fd >= 0 {
            watched.callbacks.withLock { $0[fd] = onExit }
        } else if errno == ESRCH {
            onExit()
            return
        } else {
            watched.pending.withLock { $0.append((pid, onExit)) }
        }
        wake()
    }

    /// Takes over `pidfd` (a child's, made with it): reaps the child once it has exited, then
    /// closes the descriptor. For a child that was just sent SIGKILL, whose end is a moment
    /// away: reaping it without waiting would find it still running and leave it a zombie of
    /// deskd's for ever.
    public func reap(pidfd: Int32) {
        guard pidfd >= 0 else { return }
        watched.callbacks.withLock { $0[pidfd] = {} }
        wake()
    }

    /// Makes the monitor thread look again at what it watches.
    private func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private static func run(wakeRead: Int32, watched: Watched) {
        var drain = [UInt8](repeating: 0, count: 64)
        while true {
            let waiting = watched.openPending()
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            fds += watched.callbacks.withLock { $0.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) } }
            // The thread never gives up: without it no exit is noticed and no child reaped.
            if poll(&fds, nfds_t(fds.count), waiting ? 100 : -1) < 0 {
                if errno != EINTR { usleep(100_000) }
                continue
            }
            if fds[0].revents != 0 { _ = Glibc.read(wakeRead, &drain, drain.count) }
            // A pidfd becomes readable when its process exits.
            for entry in fds.dropFirst() where entry.revents != 0 {
                let callback = watched.callbacks.withLock { $0.removeValue(forKey: entry.fd) }
                // deskd's own children would stay zombies until waited for; others are not ours to reap.
                deskd_reap_pidfd(entry.fd)
                close(entry.fd)
                callback?()
            }
        }
    }
}
