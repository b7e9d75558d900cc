import DeskCore
import DeskLinux
import Foundation
import Logging

/// Decodes one request, works out who sent it from the kernel's credentials, and hands it to
/// the session manager. Every failure becomes a reply with a code and a sentence.
public struct ControlHandler: Sendable {
    let manager: SessionManager
    let hostName: String
    let audit: AuditTrail
    let logger: Logger

    public init(manager: SessionManager, configuration: DaemonConfiguration, logger: Logger) {
        self.manager = manager
        self.hostName = ProcessInfo.processInfo.hostName
        self.audit = manager.audit
        self.logger = logger
        if GroupDirectory.gid(named: configuration.adminGroup) == nil {
            logger.notice("admin group does not exist; only root administers sessions", metadata: ["config.adminGroup": "\(configuration.adminGroup)"])
        }
    }

    public func handle(_ bytes: [UInt8], from peer: PeerCredentials) async -> Response {
        let caller = self.caller(peer, adminGroup: await manager.adminGroup)
        let request: Request
        do { request = try Request.decode(bytes) } catch {
            logger.info("request refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)", "error.code": "\(error.code.rawValue)"])
            return Response(error: error)
        }
        let response: Response
        do { response = try await dispatch(request, caller: caller) } catch {
            logger.info("request refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)", "request.command": "\(request.command.rawValue)", "error.code": "\(error.code.rawValue)"])
            response = Response(error: error)
        }
        if let action = AuditAction(request.command) {
            let owner = await request.display.asyncMap { await manager.owner(of: Display($0)) } ?? nil
            let changed = request.command == .start || ([.kill, .reap].contains(request.command) && request.dryRun != true && !(response.sessions ?? []).isEmpty)
            audit.record(auditEntry(request, action, response, caller: caller, displayOwner: owner), changedSessions: response.ok && changed)
        }
        return response
    }

    /// What the audit trail keeps of a request: never a password, whatever the reply holds.
    /// `displayOwner` names whose session a refused request was aimed at, so the owner sees it.
    func auditEntry(_ request: Request, _ action: AuditAction, _ response: Response, caller: Caller, displayOwner: (user: String, uid: UInt32)?) -> AuditEntry {
        let sessions = response.sessions ?? []
        let single = sessions.count == 1 ? sessions.first : nil
        var details: [String] = []
        if request.command == .start {
            details.append("desktop=\(single?.desktop ?? request.desktop ?? "default")")
            if let geometry = single?.geometry.description ?? request.geometry { details.append("geometry=\(geometry)") }
        }
        if let idle = request.idleSeconds, request.command == .reap { details.append("idle=\(idle)s") }
        if request.dryRun == true { details.append("dry-run") }
        if request.viewOnly == true { details.append("view-only") }
        if request.all == true { details.append("all") }
        let outcome: String
        if let error = response.error {
            outcome = error.code.rawValue
        } else {
            switch action {
            case .start: outcome = "started"
            case .passwd: outcome = request.viewOnly == true ? "view-only password set" : "password rotated"
            case .ended: outcome = "ended"
            case .kill, .reap:
                let verb = request.dryRun == true ? "would kill" : "killed"
                outcome = sessions.isEmpty ? "nothing to kill" : "\(verb) " + sessions.map { "\($0.display) (\($0.user))" }.joined(separator: ", ")
            }
        }
        let user = single?.user ?? displayOwner?.user ?? request.user ?? (request.command == .start ? caller.userName : nil)
        return AuditEntry(
            time: Date(), peerUID: caller.uid, peerPID: caller.pid, peerUser: caller.userName, command: action,
            user: user, uid: single?.uid ?? displayOwner?.uid ?? user.flatMap { UserAccount.named($0)?.uid },
            display: single?.display ?? request.display.map(Display.init),
            detail: details.isEmpty ? nil : details.joined(separator: " "), ok: response.ok, outcome: outcome
        )
    }

    private func dispatch(_ request: Request, caller: Caller) async throws(DeskError) -> Response {
        switch request.command {
        case .ping:
            return Response(daemonVersion: DeskVersion.current)
        case .start:
            let session = try await manager.start(request, caller: caller)
            return Response(sessions: [session], connect: session.connectHints(host: hostName))
        case .list:
            let all = request.all ?? false
            var response = Response(sessions: await manager.list(all: all, caller: caller))
            if all { response.foreign = await manager.foreignDisplays(caller: caller) }
            return response
        case .show:
            guard let number = request.display else {
                throw DeskError(.badRequest, "show needs a display, for example: deskctl show :3.")
            }
            let session = try await manager.show(Display(parsing: String(number)), caller: caller)
            return Response(sessions: [session], connect: session.connectHints(host: hostName))
        case .kill:
            return Response(sessions: try await manager.kill(request, caller: caller))
        case .reap:
            return Response(sessions: try await manager.reap(request, caller: caller))
        case .probe:
            guard let number = request.display else {
                throw DeskError(.badRequest, "probe needs a display, for example: deskctl probe :3.")
            }
            let timeout = min(max(request.idleSeconds ?? 3, 1), 30)
            return Response(probe: try await manager.probe(Display(parsing: String(number)), caller: caller, timeoutSeconds: timeout))
        case .passwd:
            guard let number = request.display else {
                throw DeskError(.badRequest, "passwd needs a display, for example: deskctl passwd :3.")
            }
            let session = try await manager.rotatePassword(Display(parsing: String(number)), viewOnly: request.viewOnly ?? false, caller: caller)
            return Response(sessions: [session], connect: session.connectHints(host: hostName))
        case .status:
            return Response(status: await manager.status())
        case .logs:
            guard request.display != nil || request.session != nil else {
                throw DeskError(.badRequest, "logs needs a display or a session id, for example: deskctl logs :3.")
            }
            let display = try request.display.map { number throws(DeskError) in try Display(parsing: String(number), range: Display.supportedRange) }
            return Response(logs: try await manager.logs(display: display, sessionID: request.session,
                                                        lines: request.lines ?? SessionLogs.defaultLines, caller: caller))
        case .history:
            if let name = request.user, !caller.isAdmin, name != caller.userName {
                throw DeskError(.permissionDenied, "only an admin may read another user's (\(name)) history; leave out --user to see your own.")
            }
            return Response(history: try await audit.newest(
                visibleTo: caller, since: request.since.map(Date.init(timeIntervalSince1970:)), user: request.user,
                count: Self.historyLimit, bytes: Self.historyReplyBytes))
        }
    }

    /// The newest entries a history reply carries; older ones stay in the file for root to read.
    static let historyLimit = 2000
    /// And at most this much JSON, so one reply never holds more than a bounded buffer.
    static let historyReplyBytes = 1 << 20

    /// Root and members of the admin group are admins. Membership comes from the account
    /// database for the peer's uid alone: not from the peer's gid, which a `newgrp` or `sg`
    /// shell (or a setgid program) can make the admin group's long after the user left it.
    func caller(_ peer: PeerCredentials, adminGroup: String) -> Caller {
        let account = UserAccount.withUID(peer.uid)
        // Root is admin without a look at the group database.
        let isAdmin = peer.uid == 0 || (GroupDirectory.gid(named: adminGroup).map { gid in account?.groups.contains(gid) ?? false } ?? false)
        return Caller(uid: peer.uid, gid: peer.gid, pid: peer.pid, userName: account?.name, isAdmin: isAdmin)
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async -> T) async -> T? {
        guard let self else { return nil }
        return await transform(self)
    }
}
