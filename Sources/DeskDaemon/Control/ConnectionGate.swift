import DeskCore
import Synchronization

/// Counts open control connections, in all and per uid. A client that connects and says
/// nothing holds its slot for the read deadline at most, and one user cannot hold them all.
final class ConnectionGate: Sendable {
    let total: Int
    let perUID: Int
    private let counts = Mutex<(total: Int, byUID: [UInt32: Int])>((0, [:]))

    init(total: Int, perUID: Int) {
        self.total = total
        self.perUID = perUID
    }

    /// Takes a slot, or returns the refusal to send instead.
    func enter(uid: UInt32) -> DeskError? {
        counts.withLock { counts in
            let mine = counts.byUID[uid, default: 0]
            if mine >= perUID {
                return DeskError(.limitReached, "you already hold \(mine) open connections to deskd (daemon.max_connections_per_user is \(perUID)); close some and try again.")
            }
            if counts.total >= total {
                return DeskError(.limitReached, "deskd is serving \(counts.total) connections, its limit (daemon.max_connections); try again in a few seconds.")
            }
            counts.total += 1
            counts.byUID[uid] = mine + 1
            return nil
        }
    }

    func leave(uid: UInt32) {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.byUID[uid, default: 1] - 1
            counts.byUID[uid] = left > 0 ? left : nil
        }
    }
}
