import DeskCore
import DeskFrontProtocol
import DeskHost
import DeskLinux
import FoundationEssentials
import Glibc
import Logging

/// What others ask of a running session: the viewer census's counts, a probe, a new password,
/// and the browser gateway's login.
extension ManagedSession {
    // MARK: Viewers and health

    /// Applies what the viewer census found; only a running session moves. The monitor's
    /// census (the one that also read Xvnc's state) looks at a desktop's left clients too.
    func apply(_ count: ViewerCensus.Count, now: Date) async {
        guard isRunning else { return }
        var session = record.session
        if session.clients > 0 && count.viewers == 0 { session.lastClientAt = now }
        if count.viewers > 0 { session.lastClientAt = nil }
        session.clients = count.viewers
        session.idleSeconds = count.viewers > 0 ? 0 : max(0, Int(now.timeIntervalSince(session.lastClientAt ?? session.startedAt)))
        let stopped = count.xvncStopped ?? (lifecycle == .unresponsive && !failedProbe)
        let health: Lifecycle = stopped || failedProbe ? .unresponsive : .ready
        let persistNow = session.lastClientAt != record.session.lastClientAt || health != lifecycle
        record.session = session
        lifecycle = health
        if persistNow { persist() }
        if count.xvncStopped != nil, record.desktopLeftClients == true { await checkLeftClients() }
    }

    /// A real RFB session with Xvnc, authenticated with the session's password (read back from
    /// its file). The kernel must say the endpoint is Xvnc's first, so a squatter never sees a
    /// password response. No complete handshake within `timeout`: the session is unresponsive.
    func probe(timeout: Duration) async throws(DeskError) -> ProbeReport {
        try checkRunning()
        if isCluster { return try await clusterProbe(timeout: timeout) }
        let exposure = environment.configuration.value.vncExposure
        let host = self.host, directory = self.directory, endpoint = self.endpoint, xvnc = record.session.pid, display = self.display
        // An RFB handshake with a server that may be stopped: up to the probe's timeout.
        let outcome = await onDedicatedThread { () -> Result<RFBProbe, RFBClient.Failure> in
            let password = host.readPassword(of: directory).flatMap(VNCPasswordFile.decode)
            return host.probe(endpoint, host: exposure.reachableAddress, xvnc: xvnc, authenticate: exposure.allowsPasswordProbe,
                              password: password, timeout: timeout)
        }
        switch outcome {
        case .success(let found):
            failedProbe = false
            if lifecycle == .unresponsive {
                lifecycle = .ready
                persist()
            }
            let milliseconds = Double(found.roundTrip.components.seconds) * 1000 + Double(found.roundTrip.components.attoseconds) / 1e15
            return ProbeReport(display: display, answered: true, protocolVersion: found.protocolVersion, desktopName: found.desktopName,
                               width: found.width, height: found.height, roundTripMilliseconds: milliseconds)
        case .failure(.impostor(let what)):
            logger.warning("session endpoint held by another process", metadata: record.session.logMetadata.merging(["endpoint.holder": "\(what)"]) { $1 })
            throw DeskError(.displayBusy, "display \(display) was not probed: \(what); deskd sent it nothing. Kill the session (deskctl kill \(display)) and start a new one.")
        case .failure:
            // Only for a session still running: one that ended while it was probed keeps no mark.
            if isRunning {
                failedProbe = true
                if lifecycle == .ready {
                    lifecycle = .unresponsive
                    persist()
                }
            }
            return ProbeReport(display: display, answered: false)
        }
    }

    /// Probes and passwords are for a running session: a starting one has no Xvnc to ask yet and
    /// is about to hand out its own password; an ending one is going.
    func checkRunning() throws(DeskError) {
        switch lifecycle {
        case .ready, .unresponsive: return
        case .starting: throw DeskError(.noSuchSession, "the session on \(display) is still starting; try again once deskctl list shows it ready.")
        case .stopping, .ended: throw DeskError(.noSuchSession, "the session on \(display) is ending; see deskctl list.")
        }
    }

    // MARK: The browser gateway

    /// What the gateway needs to log in to this session's Xvnc for a browser: its socket, the
    /// pid that must be serving it, and a password read now from the session's file (a `passwd`
    /// since the link was made counts). nil unless the session runs, on a Unix socket.
    ///
    /// A view-only browser of an Xvnc desktop logs in with the view-only password, so that Xvnc itself gives it
    /// view rights only: no input, and none of the owner's clipboard (ServerCutText), which the
    /// gateway could not withhold from a full login without parsing every framebuffer update. A
    /// session without a view-only password gets one now, which nobody is shown.
    func gatewayLogin(viewOnly: Bool) async -> DesktopLogin? {
        if isCluster { return clusterDesktopLogin(viewOnly: viewOnly) }
        let exposure = environment.configuration.value.vncExposure
        guard isRunning else { return nil }
        if record.session.server.viewerAccess == .ownersSocket {
            // A server on the session's owner-only socket asks no password, and has no view-only
            // one: the gateway itself keeps a view-only browser's input and the clipboard out.
            return DesktopLogin(endpoint: endpoint, xvnc: record.session.pid, password: nil, readsServerMessages: record.session.server.relayReadsServerMessages)
        }
        guard exposure.allowsPasswordProbe || !exposure.usesTCP else { return nil }
        let host = self.host, directory = self.directory, owner = record.session.uid, group = record.session.gid
        let lock = passwordFile
        // Files in the session's directory, which is the user's: they can make it slow.
        let password = await onDedicatedThread { () -> String? in
            lock.withLock {
                guard let bytes = host.readPassword(of: directory), let full = VNCPasswordFile.decode(bytes) else { return nil }
                guard viewOnly else { return full }
                if let existing = VNCPasswordFile.decodeViewOnly(bytes) { return existing }
                let fresh = SessionPassword.generate()
                let written = (try? host.replacePassword(of: directory, with: VNCPasswordFile.encode(password: full, viewOnly: fresh),
                                                         owner: owner, group: group)) != nil
                return written ? fresh : nil
            }
        }
        guard let password else {
            logger.warning("the gateway cannot read or write the session's password file", metadata: record.session.logMetadata)
            return nil
        }
        return DesktopLogin(endpoint: endpoint, address: exposure.reachableAddress, xvnc: record.session.pid, password: password,
                            readsServerMessages: record.session.server.relayReadsServerMessages)
    }

    // MARK: Passwords

    /// A new full password, or (`viewOnly`) a new view-only one beside the kept full one. Xvnc
    /// reads its password file at every authentication, so the next viewer needs the new one;
    /// connected viewers stay connected.
    func rotatePassword(viewOnly: Bool) async throws(DeskError) -> Session {
        try checkRunning()
        guard record.session.server.viewerAccess == .password else {
            throw DeskError(.badRequest, "the desktop on \(display) is a Wayland desktop: its VNC server (\(record.session.server.viewerProgram)) asks no password on its socket, which only its owner and root can reach, so there is none to change; deskctl kill \(display) ends every viewer's access.")
        }
        if isCluster {
            // The password file is on the compute node, the job's; deskd does not send passwords
            // over the hop, which is authenticated but not encrypted.
            throw DeskError(.badRequest, "deskctl passwd does not change a cluster desktop's password; deskctl url --revoke \(display) takes its browser links back, and a new desktop (deskctl kill, then start --slurm) has new passwords.")
        }
        let host = self.host, directory = self.directory, owner = record.session.uid, group = record.session.gid
        let fresh = SessionPassword.generate()
        let display = self.display, lock = passwordFile
        // The directory is the user's: read and written off the actor, like every other touch of it.
        // Files in the session's directory, which is the user's: they can make it slow.
        let written = await onDedicatedThread { () -> Result<Void, DeskError> in lock.withLock { () -> Result<Void, DeskError> in
            let bytes: [UInt8]
            if viewOnly {
                guard let current = host.readPassword(of: directory).flatMap(VNCPasswordFile.decode) else {
                    return .failure(DeskError(.internalError, "the password file of \(display) is missing or damaged; set a new full password first with: deskctl passwd \(display)."))
                }
                bytes = VNCPasswordFile.encode(password: current, viewOnly: fresh)
            } else {
                // A new full password also drops any view-only one: rotating is how access is revoked.
                bytes = VNCPasswordFile.encode(password: fresh)
            }
            do throws(OSError) { try host.replacePassword(of: directory, with: bytes, owner: owner, group: group) } catch {
                return .failure(DeskError(.internalError, "could not write the new password for \(display): \(error).", cause: .init(error)))
            }
            return .success(())
        } }
        try written.get()
        var reply = session
        if viewOnly { reply.viewOnlyPassword = fresh } else { reply.password = fresh }
        return reply
    }
}
