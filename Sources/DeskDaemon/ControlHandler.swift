import DeskCore
import DeskLinux
import Foundation
import Logging

/// Decodes one request, works out who sent it from the kernel's credentials, and hands it to
/// the session manager. Every failure becomes a reply with a code and a sentence.
public struct ControlHandler: Sendable {
    let manager: SessionManager
    let adminGID: UInt32?
    let hostName: String
    let logger: Logger

    public init(manager: SessionManager, configuration: DaemonConfiguration, logger: Logger) {
        self.manager = manager
        self.adminGID = GroupDirectory.gid(named: configuration.adminGroup)
        self.hostName = ProcessInfo.processInfo.hostName
        self.logger = logger
        if adminGID == nil {
            logger.notice("admin group does not exist; only root administers sessions", metadata: ["config.adminGroup": "\(configuration.adminGroup)"])
        }
    }

    public func handle(_ bytes: [UInt8], from peer: PeerCredentials) async -> Response {
        let caller = self.caller(peer)
        do throws(DeskError) {
            let request = try Request.decode(bytes)
            return try await dispatch(request, caller: caller)
        } catch {
            logger.info("request refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)", "error.code": "\(error.code.rawValue)"])
            return Response(error: error)
        }
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
        }
    }

    /// Root and members of the admin group are admins; group membership comes from the
    /// account database for the peer's uid, not from anything the peer sent.
    func caller(_ peer: PeerCredentials) -> Caller {
        let account = UserAccount.withUID(peer.uid)
        let isAdmin = peer.uid == 0 || adminGID.map { gid in peer.gid == gid || (account?.groups.contains(gid) ?? false) } ?? false
        return Caller(uid: peer.uid, gid: peer.gid, pid: peer.pid, userName: account?.name, isAdmin: isAdmin)
    }
}
