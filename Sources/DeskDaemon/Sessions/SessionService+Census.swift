import DeskCore
import DeskHost
import DeskLinux
import FoundationEssentials
import Glibc
import Logging

// MARK: Metrics, viewers, foreign displays

extension SessionService {
    // MARK: Metrics

    /// Every metric, as Prometheus reads it (`deskctl metrics`, `[metrics] listen`). Viewer
    /// counts are the monitor's, at most a second old: a scrape, which anyone who reaches the
    /// listener may send, costs a look at each session and never a census of the host.
    public func metricsText() async -> String {
        var byState: [SessionState: Int] = [:]
        var native = 0, browsers = 0
        let sessions = await registry.all
        for managed in sessions {
            let session = await managed.session
            byState[session.state, default: 0] += 1
            // A browser's relay is one of Xvnc's connections, so the census counted it too;
            // the two are read a moment apart, hence the floor, per session.
            let relayed = environment.browsers.count(sessionID: managed.id)
            browsers += relayed
            native += max(0, session.clients - relayed)
        }
        let free = await freeDisplayCount(configuration)
        return environment.metrics.text(with: .init(
            sessionsByState: byState,
            nativeViewers: native, browserViewers: browsers,
            freeDisplays: free,
            outstandingLinks: environment.links.outstanding(),
            listeners: environment.listeners.all,
            residentBytes: ProcFS.ownResidentBytes()
        ))
    }

    /// Displays in the configured range that no deskd session holds (X servers deskd did not
    /// start are not looked for: that would be a look at every display's lock).
    func freeDisplayCount(_ configuration: DaemonConfiguration) async -> Int {
        max(0, configuration.displayRange.count - (await registry.heldDisplays.count))
    }

    // MARK: Viewers, foreign displays

    /// Updates viewer counts, idle times and health from the kernel (`ViewerCensus`). The census
    /// runs off every actor, so however many sockets the host holds, requests are not held up;
    /// its answer is applied by session id, to the sessions still there when it comes back.
    /// Cheap enough to run every second.
    /// Counts every session's viewers; `health` (the monitor's census each second) also reads
    /// each Xvnc's state, which a reader's refresh leaves as the last census found it.
    public func refresh(now: Date = Date(), health: Bool = false) async {
        let sessions = await registry.all
        guard !sessions.isEmpty else { return }
        let subjects = sessions.compactMap { $0.shown.withLock { $0.censusSubject } }
        let host = self.host, socketDirectory = configuration.runtimeDirectory
        let counts = await onBlockingPool { [subjects] in host.viewerCensus(subjects, socketDirectory: socketDirectory, health: health) }
        for managed in sessions {
            if let count = counts[managed.id] {
                // A reader's census moves a session only where its viewers changed (what else a
                // census sets, the idle time, `shownSession` reads off the clock); the monitor's,
                // which reads Xvnc's state too, is applied to each.
                if !health, managed.shown.withLock({ $0.session.clients }) == count.viewers { continue }
                await managed.apply(count, now: now)
            } else if managed.isCluster {
                await managed.refreshClusterIdle(now: now)
            }
        }
    }

    /// Displays in range held by X servers deskd did not start: never touched, never allocated over.
    public func foreignDisplays(caller: Caller) async -> [ForeignDisplay] {
        guard caller.isAdmin else { return [] }
        let range = configuration.displayRange
        let held = await registry.heldDisplays
        let host = self.host, portBase = configuration.vncExposure.rfbPortBase
        return await onBlockingPool {
            let occupancy = host.displayOccupancy(in: range, rfbPortBase: portBase)
            return range.map(Display.init).compactMap { display in
                guard !held.contains(display) else { return nil }
                let found = occupancy(display)
                guard !found.isUsable else { return nil }
                var pid: Int32?
                if case .liveLock(let owner) = found, owner > 0 { pid = owner }
                return ForeignDisplay(display: display, reason: found.reason, pid: pid)
            }
        }
    }
}
