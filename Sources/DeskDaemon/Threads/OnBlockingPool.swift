import DeskLinux
import NIOPosix

/// Short blocking work (a /proc scan, the kernel's socket tables, a small file of root's, a
/// session's log) on NIO's blocking pool: a few threads that every such call shares, so a burst
/// of them (200 sessions' teardowns at once) queues there instead of starting a thread each, and
/// none of them holds a thread of Swift's cooperative pool.
///
/// What can wait for seconds (a helper's answer, an RFB handshake with a server that may be
/// stopped, a Slurm command, a user's tree to remove) takes a thread of its own instead
/// (`onDedicatedThread`): on the pool it would hold one of its few threads and stall the short
/// work behind it.
func onBlockingPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    do { return try await NIOThreadPool.singleton.runIfActive(work) } catch {
        // The pool has been shut down (deskd is exiting): the work still runs.
        return await onDedicatedThread(work)
    }
}
