import DeskCore
import DeskLinux
import FoundationEssentials
import Logging

/// Between the control socket and the service: decodes a request, works out who sent it from
/// the kernel's credentials, routes it to one typed method of `SessionService`, and writes what
/// the verb audits. Every failure becomes a reply with a code and a sentence.
///
/// Adding a verb: a `Command` case, its `Route` in `route(_:)` (the switch will not compile
/// without one), the method on `SessionService`, a file in Sources/deskctl, and docs/PROTOCOL.md.
public struct ControlHarness: Sendable {
    let service: SessionService
    let hostName: String
    let logger: Logger

    public init(service: SessionService, logger: Logger) {
        self.service = service
        self.hostName = ProcessInfo.processInfo.hostName
        self.logger = logger
        if service.environment.host.groupID(named: service.adminGroup) == nil {
            logger.notice("admin group does not exist; only root administers sessions", metadata: ["config.adminGroup": "\(service.adminGroup)"])
        }
    }

    /// What one verb does and what the audit trail keeps of it.
    struct Route: Sendable {
        /// nil for the verbs that change nothing.
        var audit: AuditAction?
        var handle: @Sendable (Request, Caller, ControlHarness) async throws(DeskError) -> Response

        static func reading(_ handle: @escaping @Sendable (Request, Caller, ControlHarness) async throws(DeskError) -> Response) -> Route {
            Route(audit: nil, handle: handle)
        }

        static func audited(_ action: AuditAction, _ handle: @escaping @Sendable (Request, Caller, ControlHarness) async throws(DeskError) -> Response) -> Route {
            Route(audit: action, handle: handle)
        }
    }

    /// The route table: one entry per verb.
    static func route(_ command: Command) -> Route {
        switch command {
        case .ping:
            .reading { _, _, _ in Response(daemonVersion: DeskVersion.current) }
        case .start:
            .audited(.start) { (request, caller, harness) async throws(DeskError) -> Response in
                let options = try StartOptions(request)
                guard request.web == true else {
                    let session = try await harness.service.start(options, caller: caller)
                    return Response(sessions: [session], connect: session.connectHints(host: harness.hostName))
                }
                let (session, link) = try await harness.service.startForBrowser(
                    options, ttlSeconds: request.ttlSeconds ?? BrowserLink.defaultTTLSeconds, hostName: harness.hostName, caller: caller)
                return Response(sessions: [session], connect: session.connectHints(host: harness.hostName), link: link)
            }
        case .list:
            .reading { (request, caller, harness) async throws(DeskError) -> Response in
                let all = request.all ?? false
                var response = Response(sessions: await harness.service.list(all: all, caller: caller))
                if all { response.foreign = await harness.service.foreignDisplays(caller: caller) }
                return response
            }
        case .show:
            .reading { (request, caller, harness) async throws(DeskError) -> Response in
                let session = try await harness.service.show(request.requiredDisplay(for: .show), caller: caller)
                return Response(sessions: [session], connect: session.connectHints(host: harness.hostName))
            }
        case .kill:
            .audited(.kill) { (request, caller, harness) async throws(DeskError) -> Response in
                Response(sessions: try await harness.service.kill(KillTarget(request), caller: caller))
            }
        case .reap:
            .audited(.reap) { (request, caller, harness) async throws(DeskError) -> Response in
                Response(sessions: try await harness.service.reap(ReapOptions(request), caller: caller))
            }
        case .probe:
            .reading { (request, caller, harness) async throws(DeskError) -> Response in
                Response(probe: try await harness.service.probe(request.requiredDisplay(for: .probe), timeoutSeconds: request.idleSeconds ?? 3, caller: caller))
            }
        case .passwd:
            .audited(.passwd) { (request, caller, harness) async throws(DeskError) -> Response in
                let (session, revoked) = try await harness.service.rotatePassword(request.requiredDisplay(for: .passwd), viewOnly: request.viewOnly ?? false, caller: caller)
                return Response(sessions: [session], connect: session.connectHints(host: harness.hostName), revoked: revoked)
            }
        case .status:
            .reading { _, _, harness in Response(status: await harness.service.status()) }
        case .logs:
            .reading { (request, caller, harness) async throws(DeskError) -> Response in
                Response(logs: try await harness.service.logs(LogsTarget(request), lines: request.lines ?? SessionLogs.defaultLines, caller: caller))
            }
        case .url:
            .audited(.url) { (request, caller, harness) async throws(DeskError) -> Response in
                if request.revoke == true {
                    return Response(revoked: try await harness.service.revokeLinks(request.requiredDisplay(for: .url), caller: caller))
                }
                return Response(link: try await harness.service.browserLink(
                    request.requiredDisplay(for: .url), viewOnly: request.viewOnly ?? false,
                    ttlSeconds: request.ttlSeconds ?? BrowserLink.defaultTTLSeconds, hostName: harness.hostName, caller: caller))
            }
        case .metrics:
            .reading { (_, caller, harness) async throws(DeskError) -> Response in
                guard caller.isAdmin else {
                    throw DeskError(.permissionDenied, "deskctl metrics is for admins (root and the \(harness.service.adminGroup) group); deskctl status shows anyone the session counts.")
                }
                return Response(metrics: await harness.service.metricsText())
            }
        case .desktops:
            .reading { _, _, harness in Response(desktops: harness.service.desktops()) }
        case .history:
            .reading { (request, caller, harness) async throws(DeskError) -> Response in
                if let name = request.user, !caller.isAdmin, name != caller.userName {
                    throw DeskError(.permissionDenied, "only an admin may read another user's (\(name)) history; leave out --user to see your own.")
                }
                return Response(history: try await harness.service.audit.newest(
                    visibleTo: caller, since: request.since.map(Date.init(timeIntervalSince1970:)), user: request.user,
                    count: Self.historyLimit, bytes: Self.historyReplyBytes))
            }
        }
    }

    /// The newest entries a history reply carries; older ones stay in the file for root to read.
    static let historyLimit = 2000
    /// And at most this much JSON, so one reply never holds more than a bounded buffer.
    static let historyReplyBytes = 1 << 20

    public func handle(_ bytes: [UInt8], from peer: PeerCredentials) async -> Response {
        let caller = service.caller(peer)
        let request: Request
        do { request = try Request.decode(bytes) } catch {
            logger.info("request refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)", "error.code": "\(error.code.rawValue)"])
            return Response(error: error)
        }
        let route = Self.route(request.command)
        let response: Response
        do { response = try await route.handle(request, caller, self) } catch {
            logger.info("request refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)", "request.command": "\(request.command.rawValue)", "error.code": "\(error.code.rawValue)"])
            response = Response(error: error)
        }
        if let action = route.audit {
            let owner = await request.display.asyncMap { await service.owner(of: Display($0)) } ?? nil
            let entry = Self.auditEntry(request, action, response, caller: caller, displayOwner: owner,
                                        uidOf: { service.environment.host.account(named: $0)?.uid })
            audit(entry, action: action, request: request, response: response)
        }
        return response
    }

    private func audit(_ entry: AuditEntry, action: AuditAction, request: Request, response: Response) {
        let ended = !(response.sessions ?? []).isEmpty && request.dryRun != true
        let changed = switch action {
        case .start: true
        case .kill, .reap: ended
        case .passwd, .url, .ended: false
        }
        service.audit.record(entry, changedSessions: response.ok && changed)
    }

    /// What the audit trail keeps of a request: never a password, whatever the reply holds.
    /// `displayOwner` names whose session a refused request was aimed at, so the owner sees it.
    static func auditEntry(_ request: Request, _ action: AuditAction, _ response: Response, caller: Caller,
                           displayOwner: (user: String, uid: UInt32)?, uidOf: (String) -> UInt32?) -> AuditEntry {
        let sessions = response.sessions ?? []
        let single = sessions.count == 1 ? sessions.first : nil
        var details: [String] = []
        if action == .start {
            details.append("desktop=\(single?.desktop ?? request.desktop ?? "default")")
            if let geometry = single?.geometry.description ?? request.geometry { details.append("geometry=\(geometry)") }
            // start --web hands out a browser link too: as much a credential as url's, so as traced.
            if request.web == true { details.append("web ttl=\(request.ttlSeconds ?? BrowserLink.defaultTTLSeconds)s") }
        }
        if let idle = request.idleSeconds, action == .reap { details.append("idle=\(idle)s") }
        if action == .url && request.revoke != true { details.append("ttl=\(request.ttlSeconds ?? BrowserLink.defaultTTLSeconds)s") }
        if let revoked = response.revoked, revoked.links + revoked.browsers > 0 { details.append(revoked.summary) }
        if request.dryRun == true { details.append("dry-run") }
        if request.viewOnly == true { details.append("view-only") }
        if request.all == true { details.append("all") }
        let outcome: String
        if let error = response.error {
            outcome = error.code.rawValue
        } else {
            switch action {
            case .start: outcome = response.link == nil ? "started" : "started, link issued"
            case .passwd: outcome = request.viewOnly == true ? "view-only password set" : "password rotated"
            case .url where request.revoke == true: outcome = "links revoked"
            case .url: outcome = request.viewOnly == true ? "view-only link issued" : "link issued"
            case .ended: outcome = "ended"
            case .kill, .reap:
                let verb = request.dryRun == true ? "would kill" : "killed"
                outcome = sessions.isEmpty ? "nothing to kill" : "\(verb) " + sessions.map { "\($0.display) (\($0.user))" }.joined(separator: ", ")
            }
        }
        let user = single?.user ?? displayOwner?.user ?? request.user ?? (action == .start ? caller.userName : nil)
        return AuditEntry(
            time: Date(), peerUID: caller.uid, peerPID: caller.pid, peerUser: caller.userName, command: action,
            user: user, uid: single?.uid ?? displayOwner?.uid ?? user.flatMap(uidOf),
            display: single?.display ?? request.display.map(Display.init),
            detail: details.isEmpty ? nil : details.joined(separator: " "), ok: response.ok, outcome: outcome
        )
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async -> T) async -> T? {
        guard let self else { return nil }
        return await transform(self)
    }
}
