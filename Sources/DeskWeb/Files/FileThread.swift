import Glibc
import NIOCore
import NIOPosix
import Synchronization

/// One transfer's own thread for the blocking reads and writes of its descriptor.
///
/// Its own, not a shared pool's: a user's file on a hung NFS mount or a FUSE file system that
/// never answers, or their stopped tar, blocks this transfer and no one else's. Threads are
/// bounded by deskd's `[files] transfers`: a transfer's end is reported to deskd, which frees
/// its slot, only once its descriptor is closed (`whenClosed`), so a thread stuck in a hung read
/// keeps its owner's slot taken rather than letting them start another. Its jobs run one at a time in the order given, and
/// the descriptor is closed by the last of them, so no read or write can reach the number after
/// it was closed, when it may already be another user's upload passed in by deskd. Used from
/// its transfer's event loop only; the thread starts with the first job.
final class FileThread {
    private var pool: NIOThreadPool?
    private var finished = false
    let fd: Int32
    private let closing = Closing()

    /// The close, and what waits for it (run then, on the closing thread).
    private final class Closing: Sendable {
        private let state = Mutex<(done: Bool, waiting: [@Sendable () -> Void])>((false, []))

        func close(_ fd: Int32) {
            Glibc.close(fd)
            let waiting = state.withLock { state in
                state.done = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for body in waiting { body() }
        }

        func whenClosed(_ body: @escaping @Sendable () -> Void) {
            let now = state.withLock { state in
                if !state.done { state.waiting.append(body) }
                return state.done
            }
            if now { body() }
        }
    }

    init(fd: Int32) {
        self.fd = fd
    }

    /// `job` with the descriptor, after every job before it; its result on `eventLoop`.
    func run<Result: Sendable>(on eventLoop: any EventLoop, _ job: @escaping @Sendable (Int32) -> Result) -> EventLoopFuture<Result> {
        precondition(!finished, "a FileThread takes no job after finish()")
        let pool = pool ?? {
            let started = NIOThreadPool(numberOfThreads: 1)
            started.start()
            self.pool = started
            return started
        }()
        let fd = fd
        return pool.runIfActive(eventLoop: eventLoop) { job(fd) }
    }

    /// Closes the descriptor once the jobs before it are done, then lets the thread go. (NIO's
    /// shutdown would hand queued jobs `.cancelled` on another thread at once, while one may
    /// still be running: so the close is a job of its own.)
    func finish() {
        guard !finished else { return }
        finished = true
        let fd = fd, closing = closing
        guard let pool else { return closing.close(fd) }
        pool.submit { _ in
            closing.close(fd)
            pool.shutdownGracefully { _ in }
        }
    }

    /// Runs `body` once the descriptor is closed (at once if it is), on whichever thread closed it.
    func whenClosed(_ body: @escaping @Sendable () -> Void) {
        closing.whenClosed(body)
    }
}
