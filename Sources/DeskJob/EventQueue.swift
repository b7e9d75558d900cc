import CDeskShims
import DeskCore
import DeskLinux
import Glibc
import Synchronization

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
