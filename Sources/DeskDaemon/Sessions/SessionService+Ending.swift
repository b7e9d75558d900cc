import DeskCore
import DeskFrontProtocol
import DeskHost
import DeskLinux
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// Ending desktops on request (kill, reap, the idle limit), and what a desktop is asked or given
/// while it runs (probe, a new password).
extension SessionService {
    // MARK: Kill, reap

    func kill(_ request: KillRequest, caller: Caller) async throws(DeskError) -> [Session] {
        let targets: [ManagedSession]
        switch request {
        case .display(let display):
            targets = [try await session(on: display, caller: caller, action: "kill")]
        case .user(let name):
            let account = try existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: account.uid) else {
                throw DeskError(.permissionDenied, "only an admin may kill another user's (\(account.name)) sessions.")
            }
            targets = await registry.all.filter { $0.uid == account.uid }
        case .all:
            targets = await registry.all.filter { policy.mayAct(caller, onSessionOf: $0.uid) }
        }
        var sessions: [(ManagedSession, Session)] = []
        for managed in targets {
            let session = await managed.session
            logger.info("session kill requested", metadata: session.logMetadata.merging(["peer.uid": "\(caller.uid)"]) { $1 })
            sessions.append((managed, session))
        }
        return await endAll(sessions, .killed(by: caller.displayName))
    }

    /// How many teardowns run at once in a kill or a reap of many sessions.
    static let teardownsAtOnce = 64

    /// Ends `sessions`, a few at a time: a teardown mostly waits (for SIGTERM to land, for the
    /// cgroup to empty, for deskd-session to close the login), so one after another would add
    /// those waits up, some tens of milliseconds a session. Returns them as ended, in order.
    private func endAll(_ sessions: [(ManagedSession, Session)], _ cause: EndCause) async -> [Session] {
        // Every session's processes are told to end first, found in one look (one walk of /proc
        // where there are no cgroups); then the teardowns, which wait.
        if sessions.count > 1 {
            var prepared: [(Session, SessionCGroup?)] = []
            for (managed, _) in sessions {
                if let found = await managed.prepareEnd(cause) { prepared.append(found) }
            }
            let host = self.host
            // Without cgroup v2, the processes are found in files the user can make slow: a thread of its own.
            let pids = await onDedicatedThread { [prepared] in host.processes(of: prepared) }
            for pid in pids.values.joined() { host.signal(pid, SIGTERM) }
        }
        await withTaskGroup(of: Void.self) { group in
            for (index, (managed, _)) in sessions.enumerated() {
                if index >= Self.teardownsAtOnce { await group.next() }
                group.addTask { await managed.end(cause) }
            }
        }
        return sessions.map { _, session in
            var ended = session
            ended.state = .exited
            return ended
        }
    }

    /// Ends the sessions without a viewer for at least the idle time (or, dry, just names them).
    func reap(_ request: ReapRequest, caller: Caller, now: Date = Date()) async throws(DeskError) -> [Session] {
        var uid: UInt32?
        if let name = request.user {
            let account = try existingAccount(name)
            guard policy.mayAct(caller, onSessionOf: account.uid) else {
                throw DeskError(.permissionDenied, "only an admin may reap another user's (\(account.name)) sessions.")
            }
            uid = account.uid
        }
        await refresh(now: now)
        var idle: [(ManagedSession, Session)] = []
        for managed in await registry.all where policy.mayAct(caller, onSessionOf: managed.uid) && (uid == nil || managed.uid == uid) {
            let session = managed.shownSession(at: now)
            if [.ready, .unresponsive].contains(session.state), session.clients == 0, session.idleSeconds >= request.idleSeconds {
                idle.append((managed, session))
            }
        }
        if request.dryRun { return idle.map(\.1) }
        for (_, session) in idle {
            logger.info("reaping idle session", metadata: session.logMetadata.merging(["session.idleSeconds": "\(session.idleSeconds)", "peer.uid": "\(caller.uid)"]) { $1 })
        }
        return await endAll(idle, caller.pid == getpid() ? .idleLimit : .reaped(by: caller.displayName))
    }

    /// Applies the configured idle limit, as root would with `deskctl reap --idle`.
    public func enforceIdleLimit() async {
        guard let limit = configuration.idleLimitSeconds else { return }
        let daemon = Caller(uid: 0, gid: 0, pid: getpid(), userName: "deskd", isAdmin: true)
        _ = try? await reap(ReapRequest(idleSeconds: limit), caller: daemon)
    }

    // MARK: Probe, passwd

    public func probe(_ display: Display, timeoutSeconds: Int, caller: Caller) async throws(DeskError) -> ProbeReport {
        let managed = try await session(on: display, caller: caller, action: "see")
        let report = try await managed.probe(timeout: .seconds(timeoutSeconds))
        await refresh()
        return report
    }

    /// A new password (or view-only password), and with it every link and browser the old one
    /// let in taken back: a view-only password takes back the view-only ones only.
    public func rotatePassword(_ display: Display, viewOnly: Bool, caller: Caller) async throws(DeskError) -> (Session, LinkRevocation) {
        let managed = try await session(on: display, caller: caller, action: "change the password of")
        let session = try await managed.rotatePassword(viewOnly: viewOnly)
        let revoked = revokeLinks(of: managed.id, on: display, viewOnlyOnly: viewOnly)
        logger.info(viewOnly ? "session view-only password set" : "session password rotated", metadata: session.logMetadata.merging([
            "peer.uid": "\(caller.uid)", "links.revoked": "\(revoked.links)", "browsers.closed": "\(revoked.browsers)",
        ]) { $1 })
        return (session, revoked)
    }
}
