import DeskCluster
import DeskCore
import DeskFrontProtocol
import DeskHost
import DeskLinux
import FoundationEssentials
import Logging

/// A cluster desktop's life as deskd sees it: submitted (`starting`, shown `queued` while Slurm
/// keeps it waiting), `ready` once its job reports the desktop answering on a node, and ended
/// when Slurm ends the job, the desktop logs out, or a kill cancels it. Two sources tell deskd:
/// the job itself, over its report line (`jobReported`), and squeue (`jobObserved`), which
/// alone is trusted with the end (a job cannot say it ended when it has not, nor keep a session
/// alive when Slurm has ended it).
extension ManagedSession {
    var clusterHub: ClusterHub { environment.cluster.hub }

    // MARK: Start

    /// Submits the job as the session's start: a kill meanwhile waits for the submission, then
    /// cancels what it submitted. Afterwards a kill no longer waits: the job may queue for hours.
    func launchCluster(_ bringUp: ClusterBringUp) async throws(DeskError) {
        defer {
            launching = false
            for waiter in startWaiters { waiter.resume() }
            startWaiters = []
        }
        do {
            try await bringUp.submit(on: self)
        } catch {
            if footprint.isEmpty {
                lifecycle = .ended
                clusterHub.forget(session: id)
                await environment.registry.release(self)
            } else {
                await finish(.startFailed("submission failed"))
            }
            if stopWhileStarting != nil { throw killedWhileStartingError }
            throw error
        }
        if let cause = stopWhileStarting {
            await finish(cause)
            throw killedWhileStartingError
        }
    }

    private var killedWhileStartingError: DeskError { Self.killedWhileStarting(display) }

    /// Returns once the job has reported its desktop ready, the session has ended, or `timeout`
    /// has passed (the job may still be queued: the caller answers with what there is).
    func awaitReady(within timeout: Duration) async {
        guard lifecycle == .starting else { return }
        await withTaskGroup(of: Void.self) { group in
            // The timeout, a child of this wait: it releases the waiters when the job is slower,
            // or at once when the wait is cancelled (its sleep ends then), so no waiter is left.
            group.addTask { [weak self] in
                try? await Task.sleep(for: timeout)
                await self?.releaseReadyWaiters()
            }
            await withCheckedContinuation { readyWaiters.append($0) }
            group.cancelAll()
        }
    }

    func releaseReadyWaiters() {
        let waiters = readyWaiters
        readyWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Takes back a cluster desktop a previous deskd submitted: its job is followed in squeue
    /// again, and its key accepted, so the job (which keeps trying) reports back in.
    func adoptCluster() {
        launching = false
        footprint = [.job, .record]
        if let key = record.cluster?.keyBytes { clusterHub.register(session: id, key: key) }
    }

    // MARK: What the job says

    /// A report from the session's job (already proven to hold the session's key), which came
    /// from `peer`'s address.
    func jobReported(_ report: JobReport, from peer: String? = nil) async {
        guard isCluster, !isEnding else { return }
        switch report.event {
        case .ready:
            // The relay is on the host the report came from. The key is the job's owner's too, so
            // a report naming another address would have root's gateway connect wherever the
            // owner pointed it (another host's port, the login node's own loopback).
            if let peer, report.address != peer {
                logger.warning("a cluster desktop's job reported a relay on another host than its own; ignoring it", metadata: record.session.logMetadata.merging([
                    "slurm.relay": "\(report.address ?? "?")", "peer": "\(peer)",
                ]) { $1 })
                return
            }
            record.cluster?.address = report.address
            record.cluster?.port = report.port
            record.session.rfbSocket = report.socket
            // squeue's node, if it named one, stands. (Not `x?.node = x?.node ?? node`: an assignment
            // through `?.` holds its write access to `record` while the right side reads it, which
            // the runtime's exclusivity check stops with a crash.)
            if let node = report.node, record.session.slurm?.node == nil { record.session.slurm?.node = node }
            let first = lifecycle == .starting
            if first {
                lifecycle = .ready
                // Idle from now: the hours it may have waited in Slurm's queue, when nobody could
                // have viewed it, are not idle time an idle limit or a reap should count.
                record.session.lastClientAt = Date()
            }
            persist()
            clusterHub.send(JobCommand(.accepted), to: id)
            logger.info(first ? "cluster desktop ready" : "cluster desktop's job reported in again", metadata: record.session.logMetadata.merging([
                "slurm.node": "\(report.node ?? "?")", "slurm.relay": "\(report.address ?? "?"):\(report.port ?? 0)",
            ]) { $1 })
            releaseReadyWaiters()
        case .viewers:
            await apply(ViewerCensus.Count(viewers: report.viewers ?? 0, xvncStopped: nil), now: Date())
        case .warned:
            logger.info("cluster desktop warned that its time limit is near", metadata: record.session.logMetadata)
        case .ending:
            jobEndingMessage = report.message
        case .failed:
            jobEndingMessage = report.message
            logger.warning("cluster desktop failed on its node", metadata: record.session.logMetadata.merging(["slurm.message": "\(report.message ?? "")"]) { $1 })
            environment.tasks.spawn { await self.end(.jobEnded(state: "FAILED", detail: report.message)) }
        }
    }

    /// What squeue says of the session's job now; nil: squeue no longer knows it (it ended longer
    /// ago than Slurm keeps ended jobs, while deskd was away).
    func jobObserved(_ row: SqueueRow?, now: Date) {
        guard isCluster, !isEnding, var job = record.session.slurm else { return }
        guard let row else {
            let state = job.hasEnded ? job.state : "ENDED"
            environment.tasks.spawn { await self.end(.jobEnded(state: state, detail: self.jobEndingMessage ?? "Slurm no longer knows the job")) }
            return
        }
        let seen = row.job(now: now)
        let changed = seen.state != job.state || seen.node != job.node || seen.reason != job.reason || seen.expectedStart != job.expectedStart
        job.state = seen.state
        job.reason = seen.reason
        job.node = seen.node ?? job.node
        job.partition = seen.partition ?? job.partition
        job.timeLimit = seen.timeLimit ?? job.timeLimit
        job.endsAt = seen.endsAt ?? (job.hasEnded ? nil : job.endsAt)
        job.expectedStart = seen.expectedStart
        record.session.slurm = job
        if SlurmJob.endStates.contains(row.state) {
            let detail = jobEndingMessage
            environment.tasks.spawn { await self.end(.jobEnded(state: row.state, detail: detail)) }
        } else if changed {
            persist()
        }
    }

    /// `deskctl extend`: the job's time limit `seconds` longer, as Slurm's operator, within
    /// `limit` in all. The extension is counted before Slurm is asked (two at once cannot pass
    /// the limit together) and given back if Slurm refuses.
    func extendJob(bySeconds seconds: Int, limit: Int, scheduler: any SlurmScheduler) async throws(DeskError) -> Session {
        guard isCluster, var job = record.session.slurm else {
            throw DeskError(.badRequest, "\(display) is a desktop on this host, which has no time limit to extend; only cluster desktops (start --slurm) have one.")
        }
        guard !isEnding, !job.hasEnded else {
            throw DeskError(.noSuchSession, "the desktop on \(display) is ending; there is nothing to extend.")
        }
        let used = job.extendedSeconds ?? 0
        guard used + seconds <= limit else {
            let left = max(0, limit - used)
            throw DeskError(.limitReached, left == 0
                ? "\(display) has been made as much longer as this site allows ([slurm] extend_max, \(SlurmTime(seconds: limit)) in all); save your work before it ends."
                : "\(display) may be made \(SlurmTime(seconds: left)) longer at most ([slurm] extend_max is \(SlurmTime(seconds: limit)) in all); ask for that or less.")
        }
        job.extendedSeconds = used + seconds
        record.session.slurm = job
        let jobID = job.jobId
        // scontrol: Slurm answers when it answers.
        if let failure = await onDedicatedThread({ scheduler.extend(jobID: jobID, bySeconds: seconds) }) {
            // Given back only when Slurm surely did not take it (a scontrol that never answered
            // may have). Read first, then written: one access to `record` at a time.
            if !failure.mayHaveApplied, let counted = record.session.slurm?.extendedSeconds {
                record.session.slurm?.extendedSeconds = max(0, counted - seconds)
            }
            persist()
            throw failure.error
        }
        // squeue says the new limit at its next look; until then the end moves by what was added.
        if let endsAt = record.session.slurm?.endsAt { record.session.slurm?.endsAt = endsAt.addingTimeInterval(Double(seconds)) }
        logger.notice("cluster desktop extended", metadata: record.session.logMetadata.merging([
            "slurm.job": "\(jobID)", "extend.seconds": "\(seconds)", "extend.total": "\(used + seconds)",
        ]) { $1 })
        persist()
        environment.changes.bump(uid: uid)
        return session
    }

    /// Between two reports the idle time still grows: the census's view of a cluster desktop is
    /// its job's last count of viewers.
    func refreshClusterIdle(now: Date) async {
        guard isCluster, isRunning else { return }
        await apply(ViewerCensus.Count(viewers: record.session.clients, xvncStopped: nil), now: now)
    }

    // MARK: Reaching it

    /// What the gateway needs for a browser: the job's relay on the node, the hop key and the
    /// password (the view-only one for a view-only browser, so the desktop's Xvnc itself takes
    /// no input from it and sends it none of the clipboard). A Wayland desktop's wayvnc asks
    /// none: then the gateway reads its messages and keeps those from the browser itself.
    func clusterDesktopLogin(viewOnly: Bool) -> DesktopLogin? {
        guard isRunning, let cluster = record.cluster, let address = cluster.address, let port = cluster.port,
              let key = cluster.keyBytes else { return nil }
        let password = record.session.server.viewerAccess == .password ? (viewOnly ? cluster.viewOnlyPassword : cluster.password) : nil
        return DesktopLogin(endpoint: .tcp(port: port), address: address, xvnc: 0, password: password, hop: .init(session: id, key: key),
                            readsServerMessages: record.session.server.relayReadsServerMessages)
    }

    /// `deskctl probe` of a cluster desktop: through its job's relay, the hop first, then a real
    /// RFB login with the session's password and a framebuffer update.
    func clusterProbe(timeout: Duration) async throws(DeskError) -> ProbeReport {
        guard let login = clusterDesktopLogin(viewOnly: false), let hop = login.hop else {
            throw DeskError(.noSuchSession, "the desktop on \(display) has not reported where it runs yet; see deskctl list.")
        }
        let display = self.display
        // The hop and an RFB handshake with a node: seconds, bounded by the probe's timeout.
        let outcome = await onDedicatedThread { () -> Result<RFBProbe, RFBClient.Failure> in
            let start = ContinuousClock.now
            do throws(RFBClient.Failure) {
                let client = try RFBClient.connect(login.endpoint, host: login.address, xvnc: nil, timeout: timeout)
                try client.beforeRFB { fd, deadline throws(RFBClient.Failure) in
                    do { try HopAuthenticator.client(fd: fd, role: .relay, session: hop.session, key: hop.key, deadline: deadline) } catch {
                        throw .rejected("the compute node's relay: \(error)")
                    }
                }
                let greeting = try client.greet()
                let version = greeting.version.dropFirst(4).split(separator: ".").compactMap { Int($0) }.map(String.init).joined(separator: ".")
                try client.authenticate(greeting, password: login.password)
                let server = try client.initialise()
                try client.refreshOnePixel(server)
                return .success(RFBProbe(protocolVersion: version, desktopName: server.desktopName, width: server.width, height: server.height,
                                         roundTrip: .now - start))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let found):
            let milliseconds = Double(found.roundTrip.components.seconds) * 1000 + Double(found.roundTrip.components.attoseconds) / 1e15
            return ProbeReport(display: display, answered: true, protocolVersion: found.protocolVersion, desktopName: found.desktopName,
                               width: found.width, height: found.height, roundTripMilliseconds: milliseconds)
        case .failure(let failure):
            logger.notice("cluster desktop did not answer a probe", metadata: record.session.logMetadata.merging(["reason": "\(failure)"]) { $1 })
            return ProbeReport(display: display, answered: false)
        }
    }

    // MARK: End

    /// The job's part of a teardown: tell the job to end its desktop (it ends every process of
    /// it), then cancel the job as its user unless Slurm has ended it already.
    func endJob() async {
        guard footprint.contains(.job), let job = record.session.slurm else { return }
        clusterHub.send(JobCommand(.end), to: id)
        if !job.hasEnded {
            let scheduler = environment.cluster.scheduler, user = self.user, jobID = job.jobId
            // scancel: Slurm answers when it answers.
            if let failure = await onDedicatedThread({ scheduler.cancel(jobID: jobID, user: user) }) {
                logger.warning("could not cancel a cluster desktop's job", metadata: record.session.logMetadata.merging(["error": "\(failure.message)"]) { $1 })
            }
        }
        clusterHub.forget(session: id)
        releaseReadyWaiters()
    }
}

/// How the gateway logs in to a session's desktop: where, as whom it must be served, with which password.
