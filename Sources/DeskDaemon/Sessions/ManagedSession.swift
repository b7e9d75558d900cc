import DeskCore
import DeskHost
import DeskLinux
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// One desktop session and everything that is its own: its directory, cgroup, login process,
/// Xvnc and desktop, its record, and where it is in its life.
///
///     starting ──▶ ready ⇄ unresponsive ──▶ stopping ──▶ ended
///         └──────────────────────────────────────▲
///
/// An actor per session, so one session's slow teardown (a user's tree of 400,000 files) or
/// stuck probe holds up no one else's, and everything that ends a session (kill, reap, an exit,
/// a failed start) goes through one teardown, run once.
///
/// Its start is `SessionBringUp`'s, run on this actor; its end is in SessionTeardown.swift, its
/// reactions to its processes' exits in ManagedSession+Exits.swift, what viewers and the gateway
/// ask of it (census, probe, passwords) in ManagedSession+Access.swift.
actor ManagedSession {
    enum Lifecycle: String, Sendable {
        case starting, ready, unresponsive, stopping, ended
    }

    nonisolated let id: String
    nonisolated let user: String
    nonisolated let uid: UInt32
    nonisolated let display: Display
    /// A desktop on a compute node, as a Slurm job (ManagedSession+Cluster.swift): nothing of
    /// it is on this host but its record; its job, reached through `ClusterHub`, is the rest.
    nonisolated let isCluster: Bool

    // Set by the bring-up, the exits and the census (this actor's extensions and SessionBringUp,
    // all isolated to it); read by everyone through `session`.
    var record: SessionRecord {
        didSet {
            let (before, now) = (oldValue.session, record.session)
            // Not the job's end time, which squeue's seconds move a little at every look.
            let (was, job) = (before.slurm, now.slurm)
            if before.clients != now.clients || was?.state != job?.state || was?.node != job?.node || was?.reason != job?.reason
                || was?.timeLimit != job?.timeLimit || was?.expectedStart != job?.expectedStart {
                environment.changes.bump(uid: uid)
            }
            publish()
        }
    }
    var lifecycle: Lifecycle {
        didSet {
            if lifecycle != oldValue { environment.changes.bump(uid: uid) }
            publish()
        }
    }
    /// What `list` and the viewer census read of the session, published at every change of its
    /// record and lifecycle: a list of two hundred sessions read it without waiting on (hopping
    /// to) two hundred actors, three times each.
    nonisolated let shown: Mutex<Shown>

    struct Shown: Sendable {
        var session: Session
        var censusSubject: ViewerCensus.Subject?
    }
    /// What of the session is on the host, for the teardown to remove.
    var footprint: SessionFootprint
    let environment: SessionEnvironment
    /// Held across every read-modify-write of the session's password file, which runs off the
    /// actor: a `passwd` and a view-only login's first use must not interleave and put an old
    /// password back.
    let passwordFile = ExclusiveSection()
    /// The last probe got no complete handshake.
    var failedProbe = false
    private var teardown: Task<Void, Never>?
    /// A kill that came while the session was starting: the start ends it, then lets them go.
    var stopWhileStarting: EndCause?
    /// Why the session is ending, from the moment its teardown begins (a cluster start that was
    /// waiting for its job answers with it).
    private(set) var endCause: EndCause?
    var startWaiters: [CheckedContinuation<Void, Never>] = []
    /// A start owns the session from its claim to its reply: its own code decides what becomes
    /// of it, and a kill meanwhile waits for that (a session made for a start begins so).
    var launching: Bool
    var login: (any LoginProcess)?
    /// The desktop's start time in ticks, read when deskd-session named its pid.
    var desktopStartTicks: UInt64?
    /// Censuses in a row that found none of the session's X clients, for a session kept for
    /// them: it ends at the second, so one odd look at the kernel's tables ends nothing.
    var emptyClientCensuses = 0
    /// A cluster start waiting for its job to report the desktop ready.
    var readyWaiters: [CheckedContinuation<Void, Never>] = []
    /// Why the job said it is ending its desktop, for the end's reason once Slurm confirms it.
    var jobEndingMessage: String?

    var host: any HostSystem { environment.host }
    var logger: Logger { environment.logger }

    /// A session about to start (`starting`, nothing on the host yet) or one a previous deskd
    /// left running (`ready`, everything on the host).
    init(record: SessionRecord, lifecycle: Lifecycle, environment: SessionEnvironment) {
        self.launching = lifecycle == .starting
        self.footprint = lifecycle == .starting ? [] : record.cluster != nil ? [.job, .record] : .all
        self.id = record.session.id
        self.user = record.session.user
        self.uid = record.session.uid
        self.display = record.session.display
        self.isCluster = record.cluster != nil
        self.record = record
        self.lifecycle = lifecycle
        self.environment = environment
        // Its census subject comes with its first move to running (a start's end, an adoption).
        self.shown = Mutex(Shown(session: Self.session(of: record, lifecycle: lifecycle, isCluster: record.cluster != nil), censusSubject: nil))
        environment.changes.bump(uid: uid)
    }

    private func publish() {
        let now = Shown(session: session, censusSubject: censusSubject)
        shown.withLock { $0 = now }
    }

    /// The session as `list` shows it at `now`, from what was published: a running session
    /// without viewers has been idle since its last viewer left (or its start), read off the
    /// clock here rather than stored by each census.
    nonisolated func shownSession(at now: Date) -> Session {
        var session = shown.withLock { $0.session }
        if session.clients == 0, session.state == .ready || session.state == .unresponsive {
            session.idleSeconds = max(0, Int(now.timeIntervalSince(session.lastClientAt ?? session.startedAt)))
        }
        return session
    }

    /// The session as `list` shows it: its state follows the lifecycle.
    var session: Session { Self.session(of: record, lifecycle: lifecycle, isCluster: isCluster) }

    static func session(of record: SessionRecord, lifecycle: Lifecycle, isCluster: Bool) -> Session {
        var session = record.session
        session.state = switch lifecycle {
        case .starting where isCluster && (record.session.slurm?.isPending ?? true): .queued
        case .starting: .starting
        case .ready: .ready
        case .unresponsive: .unresponsive
        case .stopping: .stopping
        case .ended: .exited
        }
        return session
    }

    var isEnding: Bool { lifecycle == .stopping || lifecycle == .ended }
    /// Started and not being ended: Xvnc is there to count viewers of, probe and log in to.
    var isRunning: Bool { lifecycle == .ready || lifecycle == .unresponsive }

    /// What the viewer census asks of a running session; nil for one starting or ending.
    var censusSubject: ViewerCensus.Subject? {
        isRunning && !isCluster ? ViewerCensus.Subject(sessionID: id, xvnc: record.session.pid, endpoint: endpoint) : nil
    }

    /// `<runtime>/by-id/<id>`: found from the id, never from a path read back from a file, so
    /// a teardown removes this session's directory and no other. (The runtime directory cannot
    /// move under a running deskd: a reload that moves it waits for a restart.)
    var directory: SessionDirectory { environment.configuration.value.sessionDirectories.directory(for: id) }

    /// Where Xvnc serves RFB, for deskd's own connections (its directory, never the display's link).
    var endpoint: RFBEndpoint {
        record.session.rfbPort.map(RFBEndpoint.tcp(port:)) ?? .unixSocket(path: directory.rfbSocket)
    }

    // MARK: Start

    /// Runs `bringUp` on this session and answers with the session and its password, which is
    /// in this reply and nowhere else. A start that fails unwinds what it put on the host; a
    /// kill that came meanwhile ends the session instead of its being handed out.
    func launch(_ bringUp: SessionBringUp, timings: StartTimings) async throws(SessionBringUp.Failure) -> Session {
        defer {
            launching = false
            for waiter in startWaiters { waiter.resume() }
            startWaiters = []
        }
        let password: String?
        do {
            password = try await bringUp.run(on: self, timings: timings)
        } catch {
            await unwind(after: error)
            // A kill that came meanwhile stands, even if this display was merely taken.
            if stopWhileStarting != nil { throw .failed(killedWhileStarting, step: "killed") }
            throw error
        }
        if let cause = stopWhileStarting {
            await finish(cause)
            throw .failed(killedWhileStarting, step: "killed")
        }
        var reply = session
        reply.password = password
        // A desktop whose exit does not end the session cannot fail its start: it starts the
        // moment this reply is on its way, since the X server already answers.
        if !bringUp.plan.configuration.desktopExitEndsSession {
            environment.tasks.spawn { await self.startDesktop() }
        }
        return reply
    }

    /// Lets go of the display after a failed start: through the teardown of what the start put
    /// on the host, or at once if it put nothing there (nothing to end, nothing to record).
    private func unwind(after failure: SessionBringUp.Failure) async {
        guard teardown == nil else { return await finish(.startFailed(failure.step)) }
        if footprint.isEmpty {
            lifecycle = .ended
            await environment.registry.release(self)
        } else {
            await finish(stopWhileStarting ?? .startFailed(failure.step))
        }
    }

    private var killedWhileStarting: DeskError { Self.killedWhileStarting(display) }

    static func killedWhileStarting(_ display: Display) -> DeskError {
        DeskError(.noSuchSession, "the desktop on \(display) was killed while it started; start another if you still need one.")
    }

    /// Between the steps of a start: a kill that came while it waited on the host ends it.
    func stopIfKilled() throws(SessionBringUp.Failure) {
        if stopWhileStarting != nil { throw .killed }
    }

    // MARK: Adoption

    /// Takes back a session a previous deskd left running (its Xvnc is checked by the caller).
    func adopt() {
        lifecycle = .ready
        watchExits()
    }

    // MARK: End

    /// Ends everything of the session and removes its traces, once: a second caller (two kills,
    /// an exit noticed during a kill) waits for the first. A kill of a starting session waits
    /// for the start, which then ends the session instead of handing it out.
    func end(_ cause: EndCause) async {
        if launching {
            if stopWhileStarting == nil { stopWhileStarting = cause }
            await withCheckedContinuation { startWaiters.append($0) }
        }
        await finish(cause)
    }

    /// The one teardown, started by whoever comes first. A task of its own, which every caller
    /// awaits: the teardown must run to its end even if the request that asked for it is
    /// cancelled (a client that hangs up), since its waits would not wait in a cancelled task.
    func finish(_ cause: EndCause) async {
        if let teardown {
            await teardown.value
            return
        }
        lifecycle = .stopping
        endCause = cause
        let task = Task { await self.tearDown(cause) }
        teardown = task
        await task.value
    }

    /// The first step of ending many sessions at once (a kill --all, a reap): the session is
    /// `stopping` for `cause` (its processes' exits now end nothing else), its browsers are
    /// closed, and what the caller needs to find its processes is returned, for SIGTERM to all
    /// of the sessions' at once while their teardowns wait their turn (they run a few dozen at
    /// a time). So every desktop of a kill of two hundred ends together, as two hundred
    /// SIGKILLs would, rather than batch after batch; each teardown sends SIGTERM again and
    /// finds them gone. nil for a session starting, on a node, or already ending: its teardown
    /// sees to it.
    func prepareEnd(_ cause: EndCause) -> (Session, SessionCGroup?)? {
        guard isRunning, !launching, !isCluster, teardown == nil, footprint.contains(.processes) else { return nil }
        lifecycle = .stopping
        endCause = cause
        environment.browsers.disconnect(sessionID: id)
        return (record.session, record.cgroup.map(SessionCGroup.init(path:)))
    }

    /// Saves the record of a running session, for the next deskd.
    func persist() {
        // A cluster desktop is worth a record from its submission: its job runs, queued or not.
        guard lifecycle != .starting || footprint.contains(.job), !isEnding else { return }
        do {
            try environment.store.save(record)
            footprint.insert(.record)
        } catch {
            logger.error("cannot write session record; the session will not survive a daemon restart", metadata: ["error": "\(error)"])
        }
    }
}
