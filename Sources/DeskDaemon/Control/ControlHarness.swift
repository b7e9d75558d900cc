import DeskCore
import DeskLinux
import FoundationEssentials
import Logging

/// Between the control socket and the service: decodes a request into its verb's own type
/// (`ControlRequest`), works out who sent it from the kernel's credentials, routes it to one
/// typed method of `SessionService`, and writes what the verb audits. Every failure becomes a
/// reply with a code and a sentence.
///
/// Adding a verb: a `Command` case, its request type (Sources/DeskCore/Requests), its case in
/// `respond(to:caller:)` and `Command.auditAction` (neither switch compiles without one), the
/// method on `SessionService`, a file in Sources/deskctl, and docs/PROTOCOL.md.
public struct ControlHarness: Sendable {
    let service: SessionService
    let hostName: String
    let logger: Logger

    public init(service: SessionService, logger: Logger) {
        self.service = service
        self.hostName = ProcessInfo.processInfo.hostName
        self.logger = logger
        if !service.adminGroupExists {
            logger.notice("admin group does not exist; only root administers sessions", metadata: ["config.adminGroup": "\(service.adminGroup)"])
        }
    }

    /// What a request does: one typed method of the service per verb.
    func respond(to request: ControlRequest, caller: Caller) async throws(DeskError) -> Response {
        switch request {
        case .ping:
            return Response(daemonVersion: DeskVersion.current)
        case .start(let start) where start.linkTTLSeconds == nil:
            let session = try await service.start(start, caller: caller)
            return Response(sessions: [session], connect: session.reachableHints(host: hostName))
        case .start(let start):
            let (session, link) = try await service.startForBrowser(start, hostName: hostName, caller: caller)
            return Response(sessions: [session], connect: session.reachableHints(host: hostName), link: link)
        case .list(let list):
            var response = Response(sessions: await service.list(all: list.all, caller: caller))
            if list.all { response.foreign = await service.foreignDisplays(caller: caller) }
            return response
        case .show(let show):
            let session = try await service.show(show.display, caller: caller)
            return Response(sessions: [session], connect: session.reachableHints(host: hostName))
        case .kill(let kill):
            return Response(sessions: try await service.kill(kill, caller: caller))
        case .reap(let reap):
            return Response(sessions: try await service.reap(reap, caller: caller))
        case .probe(let probe):
            return Response(probe: try await service.probe(probe.display, timeoutSeconds: probe.timeoutSeconds, caller: caller))
        case .passwd(let passwd):
            try service.admitCredentialChange(caller: caller)
            let (session, revoked) = try await service.rotatePassword(passwd.display, viewOnly: passwd.viewOnly, caller: caller)
            return Response(sessions: [session], connect: session.reachableHints(host: hostName), revoked: revoked)
        case .status:
            return Response(status: await service.status())
        case .logs(let logs):
            return Response(logs: try await service.logs(logs, caller: caller))
        case .url(let url):
            switch url.action {
            case .revoke(let share):
                try service.admitCredentialChange(caller: caller)
                return Response(revoked: try await service.revokeLinks(url.display, share: share, caller: caller))
            case .mint(let viewOnly, let ttl, let viewers):
                try service.admitCredentialChange(caller: caller)
                return Response(link: try await service.browserLink(url.display, viewOnly: viewOnly, ttlSeconds: ttl, viewers: viewers,
                                                                    hostName: hostName, caller: caller))
            case .shares:
                return Response(shares: try await service.shares(of: url.display, caller: caller))
            }
        case .metrics:
            guard caller.isAdmin else {
                throw DeskError(.permissionDenied, "deskctl metrics is for admins (root and the \(service.adminGroup) group); deskctl status shows anyone the session counts.")
            }
            return Response(metrics: await service.metricsText())
        case .desktops:
            var response = Response(desktops: service.desktops(), cluster: await service.clusterChoices())
            response.idleLimitSeconds = service.configuration.idleLimitSeconds
            return response
        case .extend(let extend):
            try service.admitCredentialChange(caller: caller)
            return Response(sessions: [try await service.extend(extend.display, bySeconds: extend.seconds, caller: caller)])
        case .history(let history):
            if let name = history.user, !caller.isAdmin, name != caller.userName {
                throw DeskError(.permissionDenied, "only an admin may read another user's (\(name)) history; leave out --user to see your own.")
            }
            return Response(history: try await service.audit.newest(
                visibleTo: caller, since: history.since, user: history.user, count: Self.historyLimit, bytes: Self.historyReplyBytes))
        }
    }

    /// The newest entries a history reply carries; older ones stay in the file for root to read.
    static let historyLimit = 2000
    /// And at most this much JSON, so one reply never holds more than a bounded buffer.
    static let historyReplyBytes = 1 << 20

    public func handle(_ bytes: [UInt8], from peer: PeerCredentials) async -> Response {
        let caller = service.caller(peer)
        let wire: Request
        do { wire = try Request.decode(bytes) } catch {
            logger.info("request refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)"].merging(error.logMetadata) { $1 })
            return Response(error: error)
        }
        let response: Response
        var typed: ControlRequest?
        do {
            let request = try ControlRequest(wire)
            typed = request
            response = try await respond(to: request, caller: caller)
        } catch {
            logger.info("request refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)", "request.command": "\(wire.command.rawValue)"].merging(error.logMetadata) { $1 })
            response = Response(error: error)
        }
        // What was asked is audited as its verb's typed request says it, and a request refused
        // for its arguments by what it named.
        if let action = wire.command.auditAction {
            let facts = typed.map(AuditFacts.init) ?? AuditFacts(refused: wire)
            let owner = await facts.display.asyncMap { await service.owner(of: $0) } ?? nil
            let entry = Self.auditEntry(facts, action, response, caller: caller, displayOwner: owner, uidOf: service.uid(ofUser:))
            audit(entry, action: action, facts: facts, response: response)
        }
        return response
    }

    private func audit(_ entry: AuditEntry, action: AuditAction, facts: AuditFacts, response: Response) {
        let ended = !(response.sessions ?? []).isEmpty && !facts.dryRun
        // What the trail is for is never left out: sessions started or ended, and credentials
        // issued or changed (a link, a share taken back, a password, a longer time limit).
        let kept = switch action {
        case .start, .passwd, .extend: true
        case .kill, .reap: ended
        case .url: facts.url != .shares
        case .ended, .login, .logout, .suppressed, .upload, .download: false
        }
        service.audit.record(entry, alwaysKept: response.ok && kept)
    }

    /// What the audit trail keeps of a request: never a password, whatever the reply holds.
    /// `displayOwner` names whose session a refused request was aimed at, so the owner sees it.
    static func auditEntry(_ facts: AuditFacts, _ action: AuditAction, _ response: Response, caller: Caller,
                           displayOwner: (user: String, uid: UInt32)?, uidOf: (String) -> UInt32?) -> AuditEntry {
        let sessions = response.sessions ?? []
        let single = sessions.count == 1 ? sessions.first : nil
        var details = facts.details
        if action == .start, let session = single {
            // What started, which the request may have left to the defaults.
            details = details.map { $0.hasPrefix("desktop=") ? "desktop=\(session.desktop)" : $0 }
            if !details.contains(where: { $0.hasPrefix("geometry=") }) {
                details.insert("geometry=\(session.geometry)", at: min(1, details.count))
            }
        }
        if let revoked = response.revoked, revoked.links + revoked.browsers > 0 { details.append(revoked.summary) }
        if facts.dryRun { details.append("dry-run") }
        if facts.viewOnly { details.append("view-only") }
        if facts.all { details.append("all") }
        let outcome: String
        if let error = response.error {
            outcome = error.code.rawValue
        } else {
            switch action {
            case .start: outcome = response.link == nil ? "started" : "started, link issued"
            case .passwd: outcome = facts.viewOnly ? "view-only password set" : "password rotated"
            case .url:
                switch facts.url {
                case .shares?: outcome = "shares listed"
                case .revoke(nil)?: outcome = "links revoked"
                case .revoke?: outcome = "share revoked"
                case .mint?, nil: outcome = facts.viewOnly ? "view-only link issued" : "link issued"
                }
            case .extend: outcome = "extended by \(SlurmTime(seconds: facts.extendSeconds ?? 0))"
            case .ended: outcome = "ended"
            case .login: outcome = "logged in"
            case .logout: outcome = "logged out"
            case .suppressed: outcome = "left out"
            // The portal's transfers are recorded by WebFiles, never through a control request.
            case .upload: outcome = "uploaded"
            case .download: outcome = "downloaded"
            case .kill, .reap:
                let verb = facts.dryRun ? "would kill" : "killed"
                outcome = sessions.isEmpty ? "nothing to kill" : "\(verb) " + sessions.map { "\($0.display) (\($0.user))" }.joined(separator: ", ")
            }
        }
        let user = single?.user ?? displayOwner?.user ?? facts.user ?? (action == .start ? caller.userName : nil)
        return AuditEntry(
            time: Date(), peerUID: caller.uid, peerPID: caller.pid, peerUser: caller.userName, command: action,
            user: user, uid: single?.uid ?? displayOwner?.uid ?? user.flatMap(uidOf),
            display: single?.display ?? facts.display,
            detail: details.isEmpty ? nil : details.joined(separator: " "), ok: response.ok, outcome: outcome
        )
    }
}

extension Command {
    /// What the audit trail records a request of this verb as; nil for the verbs that change nothing.
    var auditAction: AuditAction? {
        switch self {
        case .start: .start
        case .kill: .kill
        case .reap: .reap
        case .passwd: .passwd
        case .url: .url
        case .extend: .extend
        case .ping, .list, .show, .probe, .history, .status, .logs, .metrics, .desktops: nil
        }
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async -> T) async -> T? {
        guard let self else { return nil }
        return await transform(self)
    }
}
