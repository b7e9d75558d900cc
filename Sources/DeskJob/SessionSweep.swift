import CDeskShims
import DeskLinux
import Glibc

/// The end of every process of the session, which Slurm cannot promise: its process tracking
/// (proctrack/linuxproc, as in the lab) loses a process that double-forks or ignores SIGTERM,
/// and such a process would outlive the job on a node that is someone else's next. So the job
/// ends them itself, before Slurm's KillWait runs out:
///
/// - every descendant of the job, by walking /proc's parent links down from it (the job is a
///   child subreaper, so a double-forked process is still its descendant);
/// - every process of the user that carries the session's marker in its environment, which
///   catches one that left the tree (a `setsid` through a daemon of the user's own, say).
///
/// SIGTERM first, so a desktop can save what it can; SIGKILL to what is left after `termTime`.
/// Each round looks again: a dying process may fork.
struct SessionSweep {
    let sessionID: String
    let uid: uid_t
    let me: pid_t

    /// SIGTERM's grace, then SIGKILL's: together well within Slurm's KillWait (5 s in the lab),
    /// which starts with the SIGTERM that may have begun the end.
    static let termTime: Duration = .seconds(2)
    static let killTime: Duration = .milliseconds(1500)
    static let round: Duration = .milliseconds(50)

    /// A process as found: its pid and start time, which together name it and no later one.
    struct Found: Hashable {
        let pid: pid_t
        let startTicks: UInt64
    }

    /// Ends them all. `wait` is called between rounds and must reap the job's children (a child
    /// that has ended is a zombie until then, which no longer counts). Returns the pids still
    /// running after SIGKILL's time: none, unless a process is stuck in the kernel.
    func endAll(wait: (Duration) -> Void) -> [pid_t] {
        let start = ContinuousClock.now
        var warned: Set<Found> = []
        while true {
            let found = survivors()
            if found.isEmpty { return [] }
            let elapsed = ContinuousClock.now - start
            if elapsed < Self.termTime {
                for process in found where !warned.contains(process) {
                    send(SIGTERM, to: process)
                    warned.insert(process)
                }
            } else if elapsed < Self.termTime + Self.killTime {
                for process in found { send(SIGKILL, to: process) }
            } else {
                return found.map(\.pid)
            }
            wait(Self.round)
        }
    }

    /// The session's processes that still run (zombies have ended: they hold nothing but a pid).
    func survivors() -> [Found] {
        var processes: [pid_t: ProcFS.Process] = [:]
        var children: [pid_t: [pid_t]] = [:]
        for pid in ProcFS.allPIDs() {
            guard let process = ProcFS.process(pid) else { continue }
            processes[pid] = process
            children[process.parent, default: []].append(pid)
        }
        var session: Set<pid_t> = []
        var frontier = children[me] ?? []
        while let pid = frontier.popLast() {
            guard session.insert(pid).inserted else { continue }
            frontier += children[pid] ?? []
        }
        for pid in ProcessSweep.pids(uid: uid, sessionID: sessionID) where pid != me { session.insert(pid) }
        return session.compactMap { pid in
            guard let process = processes[pid] ?? ProcFS.process(pid), process.state != "Z", process.state != "X" else { return nil }
            return Found(pid: pid, startTicks: process.startTicks)
        }
    }

    /// Through a pidfd, and only once the pidfd is known to name the process found: a pid
    /// read from /proc may have been reused since, and the pidfd cannot be.
    private func send(_ signal: Int32, to process: Found) {
        let pidfd = deskd_pidfd_open(process.pid)
        guard pidfd >= 0 else { return }
        defer { close(pidfd) }
        guard ProcFS.process(process.pid)?.startTicks == process.startTicks else { return }
        _ = deskd_pidfd_send_signal(pidfd, signal)
    }
}
