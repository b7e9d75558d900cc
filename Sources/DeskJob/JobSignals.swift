import CDeskShims
import DeskCore
import DeskLinux
import Glibc
import Synchronization

/// The signals the job acts on, taken by a thread of their own with sigwait, so that no code of
/// the job's runs inside a signal handler: Slurm's SIGTERM (scancel, the time limit, the node
/// ending the job), SIGINT and SIGHUP, Slurm's SIGUSR1 (the time is nearly up), and SIGCHLD.
enum JobSignals {
    static let ending: Set<Int32> = [SIGTERM, SIGINT, SIGHUP]
    static let warning = SIGUSR1

    private static func set() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in ending.union([warning, SIGCHLD]) { sigaddset(&set, signal) }
        return set
    }

    /// Blocks the signals in the calling thread, which must be the main thread before it starts
    /// any other (a new thread inherits the mask, so none of them takes a signal either), and
    /// starts the thread that waits for them. A spawned process gets an empty mask back
    /// (deskd_spawn_process resets it), so its own signals are as usual.
    static func watch(into events: EventQueue) {
        signal(SIGPIPE, SIG_IGN)   // a relay's or the report's peer gone is an error code, not the end of the job
        var blocked = set()
        guard pthread_sigmask(SIG_BLOCK, &blocked, nil) == 0 else {
            StandardError.say("could not block signals: \(String(cString: strerror(errno))).")
            exit(1)
        }
        let started = DetachedThread.start(name: "deskd-job-signals") {
            var waited = set()
            while true {
                var signal: Int32 = 0
                if sigwait(&waited, &signal) == 0 { events.post(.signal(signal)) }
            }
        }
        guard started else {
            StandardError.say("could not start the thread that takes signals.")
            exit(1)
        }
    }
}
