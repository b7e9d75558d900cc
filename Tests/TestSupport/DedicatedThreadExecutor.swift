import Dispatch
import Foundation
import Synchronization

/// A thread of its own that runs a test's async body: tests that block (the gateway's through
/// blocking sockets, the booted-systemd test waiting on its container for half a minute) must
/// not do it on Swift's cooperative pool (one thread per core), or the async suites beside
/// them (the gateway's own calls into the authority, a metrics scrape) find no thread and fail.
public final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    private let available = DispatchSemaphore(value: 0)

    public init() {
        Thread { [self] in
            while true {
                available.wait()
                guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        available.signal()
    }

    /// One for all the tests: its thread lives as long as the test process.
    public static let shared = DedicatedThreadExecutor()
}
