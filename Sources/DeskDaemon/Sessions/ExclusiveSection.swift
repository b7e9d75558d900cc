import Synchronization

/// One thread at a time through a stretch of work that guards no value of its own (a file's
/// read-modify-write): a class, so the actor can hand it to the thread that does the work.
final class ExclusiveSection: Sendable {
    private let mutex = Mutex(())

    func withLock<Result>(_ body: () -> Result) -> Result {
        mutex.withLock { _ in body() }
    }
}
