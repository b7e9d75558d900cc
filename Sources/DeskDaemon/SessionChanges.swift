import Synchronization

/// A count of what a portal page would show differently: a session started, changed state,
/// gained or lost a viewer, or its job moved in Slurm's queue (or a login ended, which its
/// page should hear of at once). A page's live updates wait on it
/// (`next`), so the page asks for the list when something changed, not every few seconds.
final class SessionChanges: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<UInt64?, Never>] = [:]
        var lastWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// How many changes there have been.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Something changed: every waiter hears of it.
    func bump() {
        let (waiters, generation) = state.withLock { state in
            state.generation += 1
            defer { state.waiters = [:] }
            return (state.waiters, state.generation)
        }
        for waiter in waiters.values { waiter.resume(returning: generation) }
    }

    /// The generation once it is past `seen` (at once if it is already), or nil if nothing
    /// changed within `wait`.
    func next(after seen: UInt64, within wait: Duration) async -> UInt64? {
        await withCheckedContinuation { continuation in
            let registered: UInt64? = state.withLock { state in
                guard state.generation <= seen else { return nil }
                state.lastWaiter += 1
                state.waiters[state.lastWaiter] = continuation
                return state.lastWaiter
            }
            guard let id = registered else { return continuation.resume(returning: generation) }
            Task {
                try? await Task.sleep(for: wait)
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
            }
        }
    }
}
