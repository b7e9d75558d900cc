/// Runs blocking work (a libvncclient handshake can wait seconds on a stopped server) on a
/// thread of its own, so it never occupies one of the few threads of Swift's cooperative pool.
public func onDedicatedThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        // Without a thread to spare (the task limit reached) the work still runs, here, rather than never.
        if !DetachedThread.start(name: "deskd-blocking", { continuation.resume(returning: work()) }) {
            continuation.resume(returning: work())
        }
    }
}
