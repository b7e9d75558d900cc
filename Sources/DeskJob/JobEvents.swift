import CDeskShims
import DeskCore
import DeskLinux
import Glibc
import Synchronization

/// What the job's other threads (signals, deskd's commands, the relays) tell its main thread,
/// which alone starts and ends processes.
enum JobEvent: Sendable {
    case signal(Int32)
    case command(JobCommand.Verb)
    /// A relay began or ended: the viewer count may have changed.
    case relaysChanged
}

/// The main thread's inbox: events in order, and a pipe that wakes its poll when one arrives,
/// so it can wait for events and for its children's output at once.
final class EventQueue: Sendable {
    private let pending = Mutex<[JobEvent]>([])
    /// Polled by the main thread; one byte per post, drained before the events are taken.
    let wakeFD: Int32
    private let postFD: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        // Without this pipe the job could hear nothing (not even scancel's SIGTERM): a job that
        // cannot make one pipe has nothing to bring up either.
        guard deskd_pipe_cloexec_nonblock(&fds) == 0 else {
            StandardError.say("could not make a pipe: \(String(cString: strerror(errno))).")
            exit(1)
        }
        wakeFD = fds[0]
        postFD = fds[1]
    }

    func post(_ event: JobEvent) {
        pending.withLock { $0.append(event) }
        // A full pipe already holds a wake-up: the byte can be dropped.
        var byte: UInt8 = 1
        _ = write(postFD, &byte, 1)
    }

    /// Every event posted so far, oldest first; empties the pipe first, so that an event posted
    /// meanwhile is taken now or wakes the next poll, never lost.
    func take() -> [JobEvent] {
        var sink = [UInt8](repeating: 0, count: 256)
        while sink.withUnsafeMutableBytes({ read(wakeFD, $0.baseAddress, $0.count) }) > 0 {}
        return pending.withLock { events in
            defer { events.removeAll() }
            return events
        }
    }
}

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
