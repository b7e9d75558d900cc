import DeskCore
import DeskHost
import DeskLinux
import FoundationEssentials
import Glibc
import Logging

/// The end of a session: its processes, login, cgroup, display link, lock, directory and record,
/// each only where `footprint` says the session has it, and a note of the end in its logs and
/// the audit trail.
extension ManagedSession {
    /// SIGTERM to every process, SIGKILL after the grace period, then the login, the cgroup, the
    /// display link, the lock and socket Xvnc left, the directory and the record. Everything is
    /// found by the session's id or checked against it, so a newer session on the same display
    /// is never touched. Safe for a session half started or already gone.
    func tearDown(_ cause: EndCause) async {
        let session = record.session, host = self.host, reason = cause.reason
        // Browsers watching through the gateway are closed first, not left to notice Xvnc go,
        // and the session's unused links are dropped rather than left to expire.
        environment.browsers.disconnect(sessionID: id)
        environment.links.forget(sessionID: id)
        // A cluster desktop's processes are its job's, on a node: the job ends them.
        await endJob()
        let configuration = environment.configuration.value
        let cgroup = record.cgroup.map(SessionCGroup.init(path:))
        let members: @Sendable () -> [Int32] = { host.processes(of: session, cgroup: cgroup) }

        // Without cgroup v2, the user's processes' environ files, which the user can make slow:
        // a thread of its own, never the shared pool.
        var remaining = footprint.contains(.processes) ? await onDedicatedThread(members) : []
        if !remaining.isEmpty {
            for pid in remaining { host.signal(pid, SIGTERM) }
            remaining = await waitUntilEmpty(members, for: configuration.killGrace)
        }
        if !remaining.isEmpty {
            logger.info("session did not end on SIGTERM; sending SIGKILL", metadata: session.logMetadata.merging(["session.remaining": "\(remaining.count)"]) { $1 })
            if !(cgroup.map(host.killAll(in:)) ?? false) { for pid in remaining { host.signal(pid, SIGKILL) } }
            remaining = await waitUntilEmpty(members, for: .seconds(5))
            if !remaining.isEmpty {
                logger.error("session processes survived SIGKILL", metadata: session.logMetadata.merging(["session.pids": "\(remaining)"]) { $1 })
            }
        }
        // deskd-session ends once the last session process has: it closes the PAM login then.
        if let helper = record.helper, helper > 0 {
            // The helper is deskd's child only if this deskd started it: after a restart its pid
            // may have gone to someone else, so it counts only while it is still the same process.
            let ticks = record.helperStartTicks
            let isHelper: @Sendable () -> Bool = {
                if let ticks { return host.startTicks(of: helper) == ticks }
                guard let now = host.identity(of: helper) else { return false }
                return now.uid == 0 && now.executable?.hasSuffix("/deskd-session") == true
            }
            let left = await waitUntilEmpty({ isHelper() ? [helper] : [] }, for: .seconds(5))
            if !left.isEmpty {
                logger.error("deskd-session did not end after its session; killing it", metadata: session.logMetadata.merging(["helper.pid": "\(helper)"]) { $1 })
                if isHelper() { host.signal(helper, SIGKILL) }
            }
        }
        if let cgroup, footprint.contains(.cgroup) { host.removeCGroup(cgroup) }
        if footprint.contains(.published) { host.unpublish(display, sessionID: id, in: configuration.sessionDirectories) }
        // The tree is the user's, as large and as slow as they made it, and the lock is anyone's:
        // both are dealt with off the actor.
        let directory = self.directory, display = self.display, ownsDirectory = footprint.contains(.directory)
        await onDedicatedThread {
            if session.pid > 0 { host.releaseLock(display, ownedBy: session.pid) }
            // What the server may leave behind (a Wayland compositor's Xwayland, whose display it
            // chose itself, may not live to remove its lock when its processes end together).
            // The numbers are from a file of the owner's: only a lock the owner wrote, on a
            // display the server says it could have chosen, and whose process is gone, is removed.
            if ownsDirectory {
                for display in session.server.leftoverDisplays(in: directory.path) { host.reclaimStaleLock(display, ownedBy: session.uid) }
            }
            if ownsDirectory { host.removeSessionDirectory(directory) }
        }
        if footprint.contains(.record) { environment.store.remove(sessionID: id) }
        logger.info("session ended", metadata: session.logMetadata.merging(["session.reason": "\(reason)"]) { $1 })
        // The display is let go only once the end is on record: whoever no longer sees the
        // session in `list` finds how it ended in `history` and `logs`.
        await recordEnd(reason: reason)
        environment.metrics.sessionEnded(cause)
        lifecycle = .ended
        footprint = []
        failedProbe = false
        await environment.registry.release(self)
    }

    /// Notes the end beside the session's logs and in the audit trail, whatever ended it, and
    /// drops the owner's logs beyond their newest `sessions.keep_logs` ended sessions.
    /// deskd-session has exited by now (teardown waits for it), so how each process ended is on disk.
    func recordEnd(reason: String) async {
        let session = record.session
        var exits: [ProcessLog.Role: String] = [:]
        if let path = record.logDirectory {   // a start that failed before it made one keeps none
            let summary = SessionSummary(session)
            let archive = environment.archive, keep = environment.configuration.value.keptSessionLogs
            let live = await environment.registry.ids.subtracting([id])
            exits = await onBlockingPool {
                let exits = archive.end(in: path, summary, reason: reason, at: Date())
                archive.prune(owner: session.uid, keep: keep, live: live)
                return exits
            }
        }
        environment.audit.record(AuditEntry(
            time: Date(), peerUID: 0, peerPID: getpid(), peerUser: "deskd", command: .ended, user: session.user, uid: session.uid,
            display: session.display, detail: "session=\(session.id)", ok: true, outcome: SessionLogs.outcome(reason: reason, exits: exits)
        ), alwaysKept: true)
    }

    /// Polls `members` until none is left or `limit` passes: first after a millisecond, then
    /// less and less often up to every 10 ms. Xvnc ends within a few milliseconds of SIGTERM,
    /// and a kill of two hundred sessions is as slow as its slowest waits.
    ///
    /// The processes found are followed one by one (a look at each one's /proc entry), and the
    /// session as a whole is looked at again only once they are all gone, for any started
    /// meanwhile: without a cgroup a whole look is a walk of every process on the host, and
    /// sixty-four teardowns walking it every few milliseconds were most of a kill --all of 200.
    private func waitUntilEmpty(_ members: @escaping @Sendable () -> [Int32], for limit: Duration) async -> [Int32] {
        let host = self.host
        func followed(_ pids: [Int32]) -> [(pid: Int32, ticks: UInt64)] {
            pids.compactMap { pid in host.startTicks(of: pid).map { (pid, $0) } }
        }
        let deadline = ContinuousClock.now + limit
        var watched = followed(members())
        var pause = Duration.milliseconds(1)
        while !watched.isEmpty && ContinuousClock.now < deadline {
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(10))
            watched = watched.filter { host.startTicks(of: $0.pid) == $0.ticks }
            if watched.isEmpty { watched = followed(members()) }
        }
        return watched.map(\.pid)
    }
}
