import DeskCore
import DeskLinux

/// Which session holds which display: the one place a display is claimed, looked up and let go.
///
/// An actor, so two starts can never claim one display, and the capacity check and the claim
/// are one step: a start counts against the limits from the moment it has a display.
actor SessionRegistry {
    private var byID: [String: ManagedSession] = [:]
    private var byDisplay: [Display: ManagedSession] = [:]

    /// Claims `display` for `session` if no session of deskd holds it and the limits allow one
    /// more session for its owner. false: the display was taken since the caller looked.
    func claim(_ display: Display, for session: ManagedSession, limits: SessionLimits) throws(DeskError) -> Bool {
        // The host's caps count desktops on this host: a cluster desktop runs on a node (its
        // own cap is [slurm] max_per_user, checked at admission).
        try limits.checkCapacity(
            user: session.user,
            userSessions: byID.values.count { $0.uid == session.uid && !$0.isCluster },
            hostSessions: byID.values.count { !$0.isCluster }
        )
        guard byDisplay[display] == nil else { return false }
        byDisplay[display] = session
        byID[session.id] = session
        return true
    }

    /// Lets go of a session's display, only if it is still that session's.
    func release(_ session: ManagedSession) {
        if byID[session.id] === session { byID[session.id] = nil }
        if byDisplay[session.display] === session { byDisplay[session.display] = nil }
    }

    func session(on display: Display) -> ManagedSession? { byDisplay[display] }
    func session(id: String) -> ManagedSession? { byID[id] }

    /// Every session, lowest display first.
    var all: [ManagedSession] { byDisplay.keys.sorted().compactMap { byDisplay[$0] } }
    var heldDisplays: Set<Display> { Set(byDisplay.keys) }

    /// How many sessions there are, in all and per owner, at one moment: what admitting a start
    /// reads before the claim checks it again.
    struct Snapshot: Sendable {
        var count = 0
        var byOwner: [UInt32: Int] = [:]
        /// Cluster desktops per owner (not in `count` or `byOwner`, which are this host's).
        var clusterByOwner: [UInt32: Int] = [:]

        func sessions(of uid: UInt32) -> Int { byOwner[uid] ?? 0 }
        func clusterSessions(of uid: UInt32) -> Int { clusterByOwner[uid] ?? 0 }
    }

    var snapshot: Snapshot {
        var snapshot = Snapshot()
        for session in byID.values {
            if session.isCluster {
                snapshot.clusterByOwner[session.uid, default: 0] += 1
            } else {
                snapshot.count += 1
                snapshot.byOwner[session.uid, default: 0] += 1
            }
        }
        return snapshot
    }
    var ids: Set<String> { Set(byID.keys) }
    var isEmpty: Bool { byID.isEmpty }
}
