import Glibc
import NIOCore
import NIOPosix

/// One transfer's own thread for the blocking reads and writes of its descriptor.
///
/// Its own, not a shared pool's: a user's file on a hung NFS mount or a FUSE file system that
/// never answers, or their stopped tar, blocks this transfer and no one else's. (Threads are
/// bounded by deskd's `[files] transfers`.) Its jobs run one at a time in the order given, and
/// the descriptor is closed by the last of them, so no read or write can reach the number after
/// it was closed, when it may already be another user's upload passed in by deskd. Used from
/// its transfer's event loop only; the thread starts with the first job.
final class FileThread {
    private var pool: NIOThreadPool?
    private var finished = false
    let fd: Int32

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
        let fd = fd
        guard let pool else {
            close(fd)
            return
        }
        pool.submit { _ in
            close(fd)
            pool.shutdownGracefully { _ in }
        }
    }
}
