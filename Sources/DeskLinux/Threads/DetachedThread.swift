import CDeskShims
import Glibc

/// A thread of its own for work that blocks (a poll loop, a handshake), from pthreads directly:
/// Foundation's `Thread` is not in FoundationEssentials, and deskd's blocking work needs nothing of it.
public enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (cut to 15 bytes, the kernel's limit);
    /// false if the system would not make one (the task limit reached), and `body` did not run.
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let work = Unmanaged.passRetained(Work(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let result = pthread_create(&thread, &attributes, { context in
            let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
            deskd_name_this_thread(work.name)
            work.body()
            return nil
        }, work)
        if result != 0 { Unmanaged<Work>.fromOpaque(work).release() }
        return result == 0
    }

    private final class Work {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
