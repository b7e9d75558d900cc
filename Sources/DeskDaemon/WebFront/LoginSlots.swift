import Synchronization

/// The deskd-auth processes the portal runs at once (each a PAM conversation, which holds its
/// slot for seconds on a wrong password): `total` in all, `perClient` for one client and
/// `perAccount` for one target account, so that no client, however many addresses it has, holds
/// more than its share, and a flood at one account leaves others room. A login that finds no
/// slot waits in a short queue (first come, first served among those a slot may go to) before it
/// is told deskd is busy: a right password gets through a crowd of wrong ones within seconds.
final class LoginSlots: Sendable {
    struct Limits: Sendable {
        var total = 16
        var perClient = 1
        var perAccount = 2
        /// Logins waiting for a slot, in all; a client waits with one login at a time.
        var waiting = 32
        /// How long a login waits for its slot before it is told deskd is busy.
        var wait: Duration = .seconds(10)
    }

    /// One login's hold on a slot, for `release`.
    struct Holder: Hashable, Sendable {
        let client: String
        let account: UInt32
    }

    private struct Waiter {
        let id: UInt64
        let holder: Holder
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var running: [Holder: Int] = [:]
        var total = 0
        var waiting: [Waiter] = []
        var nextID: UInt64 = 0

        func mayRun(_ holder: Holder, _ limits: Limits) -> Bool {
            total < limits.total
                && running.filter({ $0.key.client == holder.client }).values.reduce(0, +) < limits.perClient
                && running.filter({ $0.key.account == holder.account }).values.reduce(0, +) < limits.perAccount
        }

        mutating func run(_ holder: Holder) {
            running[holder, default: 0] += 1
            total += 1
        }
    }

    let limits: Limits
    private let state = Mutex(State())

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// A slot for `holder`, at once or after a wait in the queue; false: none within the wait, or
    /// the queue is full, or this client already waits.
    func acquire(_ holder: Holder) async -> Bool {
        let id: UInt64? = state.withLock { state in
            if state.mayRun(holder, limits) {
                state.run(holder)
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return true }
        return await withCheckedContinuation { continuation in
            let queued = state.withLock { state -> Bool in
                // A slot freed meanwhile goes to this login now (no one who waits could have it:
                // each release gives every slot it can to those waiting).
                if state.mayRun(holder, limits) {
                    state.run(holder)
                    continuation.resume(returning: true)
                    return true
                }
                guard state.waiting.count < limits.waiting, !state.waiting.contains(where: { $0.holder.client == holder.client }) else {
                    continuation.resume(returning: false)
                    return true
                }
                state.waiting.append(Waiter(id: id, holder: holder, continuation: continuation))
                return false
            }
            guard !queued else { return }
            let wait = limits.wait
            // The waiter's deadline, started inside its continuation (no task to hang it on):
            // it only ever gives up a slot wait that is still queued.
            Task { [self] in
                try? await Task.sleep(for: wait)
                giveUp(id)
            }
        }
    }

    /// The slot `acquire` gave `holder` is free again: the first waiting logins it may go to get it.
    func release(_ holder: Holder) {
        let granted = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            if let count = state.running[holder] {
                state.running[holder] = count > 1 ? count - 1 : nil
                state.total -= 1
            }
            var granted: [CheckedContinuation<Bool, Never>] = []
            var index = 0
            while index < state.waiting.count {
                let waiter = state.waiting[index]
                if state.mayRun(waiter.holder, limits) {
                    state.run(waiter.holder)
                    state.waiting.remove(at: index)
                    granted.append(waiter.continuation)
                } else {
                    index += 1
                }
            }
            return granted
        }
        for continuation in granted { continuation.resume(returning: true) }
    }

    private func giveUp(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiting.remove(at: index)
        }
        waiter?.continuation.resume(returning: false)
    }

    /// Logins running and waiting now.
    var counts: (running: Int, waiting: Int) { state.withLock { ($0.total, $0.waiting.count) } }
}
