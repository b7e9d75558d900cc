import DeskClient
import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc

extension Bench {
    func run() async throws {
        if options.clusterSocket != nil {
            try clusterMeasures()
            return
        }
        for displays in [deskdDisplays, rawDisplays, vncserverDisplay...vncserverDisplay] {
            let snapshot = DisplaySnapshot.take(displays: displays)
            if let busy = displays.first(where: { !snapshot.occupancy(of: Display($0)).isUsable }) {
                throw Options.Usage("display :\(busy) is in use; deskbench needs :\(deskdDisplays.lowerBound)-:\(vncserverDisplay) free")
            }
        }
        try startDaemon()
        freshResidentMiB = residentMiB(daemonPID)
        let uname = (try? Run.of("/usr/bin/uname", ["-srm"]).stdout.trimming()) ?? "?"
        let cpu = (ProcFS.readText("/proc/cpuinfo") ?? "").split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { String($0.split(separator: ":", maxSplits: 1).last ?? "").trimming() } ?? "?"
        report("deskbench: deskd \(DeskVersion.current) (\(URL(fileURLWithPath: options.products).lastPathComponent) build), \(Date().formatted(.iso8601))")
        report("host: \(uname), \(cpu), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores; TigerVNC \(tigervncVersion())")
        report("")
        report("  " + "measure".padding(toLength: 38, withPad: " ", startingAt: 0) + "median".leftPadded(10) + "   " + "p10–p90".padding(toLength: 22, withPad: " ", startingAt: 0) + "ratio")

        if options.relayOnly {
            try browserRelays()
            try waylandBrowserRelays()
            return
        }
        if options.portalOnly {
            try portal()
            return
        }
        if options.feelOnly {
            try feel()
            return
        }
        if options.scaleOnly {
            try scale()
            return
        }
        if options.startOnly {
            try startToReady()
            return
        }
        try binaries()
        try startToReady()
        try concurrentStarts()
        try list()
        try killAndReap()
        try browserRelays()
        try waylandBrowserRelays()
        try portal()
        try feel()
        try scale()
        report("")
        report("Ratios are medians of per-pair ratios, each pair measured back to back in this run.")
    }

    func tigervncVersion() -> String {
        let text = (try? Run.of("/usr/bin/dpkg-query", ["-W", "-f", "${Version}", "tigervnc-standalone-server"]).stdout) ?? ""
        return text.isEmpty ? "?" : text
    }

    /// 1. From the request to a completed RFB handshake: deskctl start against raw Xtigervnc,
    /// alternated pair by pair, then Debian's vncserver.
    func startToReady() throws {
        report("start → completed RFB handshake (\(options.pairs) pairs)")
        let user = users[0]
        let file = try passwordFile(for: user)
        var raw: [Double] = [], desk: [Double] = [], ratios: [Double] = [], direct: [Double] = [], directRatios: [Double] = []
        // One warm-up of each, so the first pair does not pay for cold caches.
        for index in 0...options.pairs {
            let display = rawDisplays.lowerBound
            let start = now()
            _ = try launchRaw(display, as: user, passwordFile: file)
            guard waitForRaw(display) else { throw Options.Usage("raw Xtigervnc did not answer") }
            let rawSeconds = now() - start
            stopRaw(display)
            let (session, deskSeconds) = try deskctlStart(user)
            _ = try deskctlKill(session.display)
            // The same request over the socket from this process: deskd's share without deskctl's.
            let (socketSession, socketSeconds) = try socketStart(user)
            _ = try deskctlKill(socketSession.display)
            guard index > 0 else { continue }
            raw.append(rawSeconds)
            desk.append(deskSeconds)
            ratios.append(deskSeconds / rawSeconds)
            direct.append(socketSeconds)
            directRatios.append(socketSeconds / rawSeconds)
        }
        row("raw Xtigervnc, -auth, socket (floor)", Stats(values: raw))
        row("deskctl start (whole process)", Stats(values: desk), String(format: "%.2f× raw (goal ≤ 1.10×)", Stats(values: ratios).median))
        row("the start request alone (no CLI)", Stats(values: direct), String(format: "%.2f× raw", Stats(values: directRatios).median))
        try wrapperStarts(user, passwordFile: file)
        try xfceStarts(user, passwordFile: file)
        try waylandStarts(user)

        var wrapper: [Double] = [], wrapperRatios: [Double] = []
        for _ in 0..<options.vncserverRuns {
            let seconds = try vncserverStart(vncUser)
            vncserverKill(vncUser)
            let (session, deskSeconds) = try deskctlStart(user)
            _ = try deskctlKill(session.display)
            wrapper.append(seconds)
            wrapperRatios.append(seconds / deskSeconds)
        }
        row("vncserver (Debian's wrapper)", Stats(values: wrapper), String(format: "deskctl %.0f× faster (goal ≥ 40×)", Stats(values: wrapperRatios).median))
        report("  (vncserver -kill left \(vncserverLeftovers.max() ?? 0) process(es) of the session running; deskctl kill leaves none, below)")
    }

    /// 1b. The xstartup most people have: a shell that stays while its child opens the display.
    /// Raw is Xtigervnc to its handshake, then the same script run by hand to its first X
    /// client, one after the other as a person would; deskd is `deskctl start` to its answer,
    /// which comes once the child has connected.
    func wrapperStarts(_ user: UserAccount, passwordFile file: String) throws {
        let (raw, desk, ratios) = try desktopPairs(options.pairs, user, passwordFile: file, desktop: "wrapper", script: Self.wrapperDesktop)
        row("raw + xstartup by hand, child connects", Stats(values: raw))
        row("deskctl start, xstartup without exec", Stats(values: desk), String(format: "%.2f× raw + desktop (goal ≤ 1.25×)", Stats(values: ratios).median))
    }

    /// 1c. Debian's Xfce from an xstartup without `exec`, to its panel on screen (in the window
    /// manager's client list): raw Xtigervnc and the script by hand, against deskctl start.
    /// Only where xfce4 is installed.
    func xfceStarts(_ user: UserAccount, passwordFile file: String) throws {
        guard access("/usr/bin/startxfce4", X_OK) == 0, access("/usr/bin/dbus-launch", X_OK) == 0 else {
            report("  Xfce to its panel: skipped, xfce4 and dbus-x11 are not installed here")
            return
        }
        let (raw, desk, ratios) = try desktopPairs(max(2, options.pairs / 3), user, passwordFile: file, desktop: "xfce", script: Self.xfceDesktop) { display, authority in
            guard self.waitForPanel(display, authority: authority) else { throw Options.Usage("Xfce's panel never came on \(display)") }
        }
        row("raw + Xfce by hand, to its panel", Stats(values: raw))
        row("deskctl start Xfce, to its panel", Stats(values: desk), String(format: "%.2f× raw (goal ≤ 1.25×)", Stats(values: ratios).median))
    }

    /// `count` pairs (after one warm-up) of: raw Xtigervnc to its handshake, then `script` run
    /// by hand to its first X client, then `until` (the display and its authority file);
    /// against `deskctl start --desktop desktop` to its answer, then `until`. Seconds of each,
    /// and their ratios pair by pair.
    func desktopPairs(_ count: Int, _ user: UserAccount, passwordFile file: String, desktop: String, script: String,
                      until ready: (String, String) throws -> Void = { _, _ in }) throws -> (raw: [Double], desk: [Double], ratios: [Double]) {
        var raw: [Double] = [], desk: [Double] = [], ratios: [Double] = []
        for index in 0...count {
            let display = rawDisplays.lowerBound
            let start = now()
            _ = try launchRaw(display, as: user, passwordFile: file)
            guard waitForRaw(display) else { throw Options.Usage("raw Xtigervnc did not answer") }
            _ = try runOnRaw(display, as: user, script: script)
            try ready(":\(display)", root.appendingPathComponent("raw-d\(display)/Xauthority").path)
            let rawSeconds = now() - start
            stopRaw(display)
            let deskStart = now()
            let (session, _) = try deskctlStart(user, desktop: desktop)
            try ready(session.display.description, root.appendingPathComponent("run/by-id/\(session.id)/Xauthority").path)
            let deskSeconds = now() - deskStart
            _ = try deskctlKill(session.display)
            guard index > 0 else { continue }
            raw.append(rawSeconds)
            desk.append(deskSeconds)
            ratios.append(deskSeconds / rawSeconds)
        }
        return (raw, desk, ratios)
    }

    /// Polls the window manager's client list of `display` until xfce4-panel is in it.
    func waitForPanel(_ display: String, authority: String, limit: Double = 60) -> Bool {
        let deadline = now() + limit
        let environment = ["DISPLAY=\(display)", "XAUTHORITY=\(authority)"]
        while now() < deadline {
            if let list = try? Run.of("/usr/bin/env", environment + ["xprop", "-root", "_NET_CLIENT_LIST"]).stdout,
               let ids = list.split(separator: "#").last {
                for id in ids.split(separator: ",").map({ $0.trimming() }) where !id.isEmpty {
                    if let name = try? Run.of("/usr/bin/env", environment + ["xprop", "-id", id, "WM_CLASS"]).stdout, name.contains("xfce4-panel") {
                        return true
                    }
                }
            }
            usleep(5_000)
        }
        return false
    }

    /// 2. N starts at once over the bench users, against N raw Xtigervnc at once, in rounds.
    /// The last round's sessions stay for the list and daemon-cost measures.
    func concurrentStarts() throws {
        let n = options.concurrent, rounds = 3
        report("\(n) starts at once over \(users.count) users (\(rounds) rounds)")
        let files = try users.map { try passwordFile(for: $0) }
        var raw: [Double] = [], desk: [Double] = [], ratios: [Double] = []
        for round in 1...rounds {
            let rawStart = now()
            for index in 0..<n {
                _ = try launchRaw(rawDisplays.lowerBound + index, as: users[index % users.count], passwordFile: files[index % users.count])
            }
            let rawAnswered = (0..<n).allSatisfy { waitForRaw(rawDisplays.lowerBound + $0) }
            let rawWall = now() - rawStart
            for index in 0..<n { stopRaw(rawDisplays.lowerBound + index) }
            guard rawAnswered else { throw Options.Usage("not every raw Xtigervnc answered") }

            let results = ResultBox()
            let start = now()
            DispatchQueue.concurrentPerform(iterations: n) { index in
                results.add(try? deskctlStart(users[index % users.count]))
            }
            let wall = now() - start
            let sessions = results.sessions
            let distinct = Set(sessions.map(\.display)).count
            guard sessions.count == n, distinct == n else {
                throw Options.Usage("only \(sessions.count) of \(n) concurrent starts succeeded (\(distinct) distinct displays)")
            }
            raw.append(rawWall)
            desk.append(wall)
            ratios.append(wall / rawWall)
            if round < rounds { _ = try Run.of(deskctl, ["kill", "--all", "--socket", socket]) }
        }
        row("\(n) raw Xtigervnc at once (wall)", Stats(values: raw))
        row("\(n) deskctl start at once (wall)", Stats(values: desk), String(format: "%.2f× raw; all %d ok, distinct displays", Stats(values: ratios).median, n))
    }

    /// A start request sent from this process, to a completed handshake.
    func socketStart(_ user: UserAccount) throws -> (session: Session, seconds: Double) {
        let start = now()
        let response = try ControlClient(socketPath: socket).send(Request(command: .start, user: user.name))
        guard let session = response.sessions?.first, waitForHandshake(session.endpoint) else {
            throw Options.Usage("start over the socket failed: \(response.error?.message ?? "no session")")
        }
        return (session, now() - start)
    }

    /// 3. list with N live sessions, whole processes; vncserver -list for one user beside it.
    /// 5. The daemon's memory and idle CPU are measured here too, while the N sessions run.
    func list() throws {
        let n = options.concurrent
        report("with \(n) live sessions")
        var table: [Double] = [], json: [Double] = []
        for _ in 0..<options.listRuns {
            table.append(try Run.of(deskctl, ["list", "--all", "--socket", socket]).seconds)
            json.append(try Run.of(deskctl, ["list", "--all", "--json", "--socket", socket]).seconds)
        }
        _ = try vncserverStart(vncUser)
        var wrapper: [Double] = []
        for _ in 0..<max(3, options.listRuns / 5) {
            wrapper.append(try Run.of("/usr/bin/vncserver", ["-list"], as: vncUser.name, capture: false).seconds)
        }
        vncserverKill(vncUser)
        row("deskctl list --all (goal < 15 ms)", Stats(values: table))
        row("deskctl list --all --json", Stats(values: json))
        row("vncserver -list (one user's own)", Stats(values: wrapper), String(format: "%.1f× deskctl list", Stats(values: wrapper).median / Stats(values: table).median))

        let pid = daemonPID
        let before = cpuSeconds(pid)
        let idle = Double(options.idleSeconds)
        Thread.sleep(forTimeInterval: idle)
        let used = cpuSeconds(pid) - before
        report("  " + "deskd resident memory, fresh".padding(toLength: 38, withPad: " ", startingAt: 0) + String(format: "%7.1f MiB", freshResidentMiB))
        report("  " + "deskd resident memory, \(n) sessions".padding(toLength: 38, withPad: " ", startingAt: 0) + String(format: "%7.1f MiB", residentMiB(pid)))
        report("  " + "deskd CPU over \(options.idleSeconds) s idle, \(n) sessions".padding(toLength: 38, withPad: " ", startingAt: 0)
               + String(format: "%8.2f %%", used / idle * 100) + "   " + "of one core (goal < 0.5 %)")
    }

    /// 4. Kill: kill --all of the N sessions still running; then one session at a time until
    /// its last process is gone. 6. One reap pass over N fresh, unwatched sessions.
    func killAndReap() throws {
        let n = options.concurrent
        report("kill and reap")
        let killAll = try Run.of(deskctl, ["kill", "--all", "--socket", socket])
        let leftAfterKill = userProcesses().count

        var singles: [Double] = []
        let uid = users[1].uid
        for _ in 0..<options.pairs {
            let (session, _) = try deskctlStart(users[1])
            let start = now()
            _ = try deskctlKill(session.display)
            // deskctl returns once deskd has seen the session's cgroup empty; check it from here too.
            while userProcesses().contains(where: { ProcFS.uid(of: $0) == uid }) && now() - start < 10 { usleep(500) }
            singles.append(now() - start)
        }
        row("deskctl kill :N until no process left", Stats(values: singles))
        row("deskctl kill --all, \(n) sessions (wall)", Stats(values: [killAll.seconds]), "\(leftAfterKill) processes left")

        let results = ResultBox()
        DispatchQueue.concurrentPerform(iterations: n) { index in results.add(try? deskctlStart(users[index % users.count])) }
        guard results.sessions.count == n else { throw Options.Usage("could not start \(n) sessions for the reap pass") }
        Thread.sleep(forTimeInterval: 1.5)
        let dry = try Run.of(deskctl, ["reap", "--idle", "1s", "--dry-run", "--json", "--socket", socket])
        let reap = try Run.of(deskctl, ["reap", "--idle", "1s", "--json", "--socket", socket])
        let reaped = (try? JSONDecoder.desk.decode([Session].self, from: Data(reap.stdout.utf8)).count) ?? 0
        row("deskctl reap --dry-run, \(n) idle", Stats(values: [dry.seconds]))
        row("deskctl reap, \(n) idle (wall)", Stats(values: [reap.seconds]), "\(reaped) reaped, \(userProcesses().count) processes left")
        report("  " + "deskd resident memory, 0 sessions".padding(toLength: 38, withPad: " ", startingAt: 0) + String(format: "%7.1f MiB", residentMiB(daemonPID)))
    }
}
