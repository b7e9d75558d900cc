import Synchronization

/// Counts of what a portal page would show differently, per account: a session of theirs
/// started, changed state, gained or lost a viewer, or its job moved in Slurm's queue (or a
/// login of theirs ended, which its page should hear of at once). A page's live updates wait on
/// its account's count (`next`), so the page asks for the list when something of its own
/// changed, not every few seconds and not at every other user's move; an admin's page, which
/// shows everyone's, waits on the count of all.
final class SessionChanges: Sendable {
    /// Whose changes a page waits for.
    enum Audience: Hashable, Sendable {
        case account(UInt32)
        case everyone
    }

    private struct Waiter {
        let audience: Audience
        let continuation: CheckedContinuation<UInt64?, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var counts: [Audience: UInt64] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var lastWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// How many changes `audience` has seen.
    func generation(for audience: Audience) -> UInt64 { state.withLock { $0.counts[audience] ?? 0 } }

    /// Something of `uid`'s changed: their pages and admins' hear of it.
    func bump(uid: UInt32) {
        let woken = state.withLock { state -> [(Waiter, UInt64)] in
            for audience in [Audience.account(uid), .everyone] { state.counts[audience, default: 0] &+= 1 }
            let hearing = state.waiters.filter { $0.value.audience == .account(uid) || $0.value.audience == .everyone }
            for id in hearing.keys { state.waiters[id] = nil }
            return hearing.values.map { ($0, state.counts[$0.audience] ?? 0) }
        }
        for (waiter, count) in woken {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: count)
        }
    }

    /// `audience`'s count once it is past `seen` (at once if it is already), or nil if nothing
    /// changed within `wait`.
    func next(for audience: Audience, after seen: UInt64, within wait: Duration) async -> UInt64? {
        await withCheckedContinuation { continuation in
            let registered: UInt64? = state.withLock { state in
                guard (state.counts[audience] ?? 0) <= seen else { return nil }
                state.lastWaiter += 1
                state.waiters[state.lastWaiter] = Waiter(audience: audience, continuation: continuation)
                return state.lastWaiter
            }
            guard let id = registered else { return continuation.resume(returning: generation(for: audience)) }
            // The waiter's deadline, started inside its continuation (no task to hang it on);
            // a change that wakes the waiter cancels it.
            let timer = Task { [self] in
                try? await Task.sleep(for: wait)
                guard !Task.isCancelled else { return }
                state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: nil)
            }
            // Kept with the waiter, so a change that wakes it ends its timer too; if the change
            // came first, the timer is ended here.
            let stillWaiting = state.withLock { state -> Bool in
                guard state.waiters[id] != nil else { return false }
                state.waiters[id]?.timer = timer
                return true
            }
            if !stillWaiting { timer.cancel() }
        }
    }
}
