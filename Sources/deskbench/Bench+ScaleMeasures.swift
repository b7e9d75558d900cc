import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc

extension Bench {
    /// 7. Hundreds of desktops on one host: a deskd of its own on displays from :100 up, N
    /// waiting desktops (640x480) started one after another over the scale users, and with 40
    /// and then all N live, what an admin waits for (list, status), what deskd costs (memory,
    /// idle CPU), how the last start compares with the first, and a reap pass and kill --all
    /// until no process is left.
    func scale() throws {
        let perSession = 80 << 20, reserve = 2 << 30
        let available = ProcFS.memoryAvailableBytes() ?? 0
        let fits = max(0, (available - reserve) / perSession)
        let n = min(options.sessions, fits)
        let checkpoint = min(options.concurrent, n)
        guard n >= checkpoint, n > 0 else {
            report("scale: skipped, \(available >> 20) MiB available is not enough for \(checkpoint) desktops")
            return
        }
        let note = n < options.sessions ? " (memory allows \(n) of the \(options.sessions) asked for)" : ""
        let scaleUsers = try (1...options.scaleUsers).map { try Self.ensureUser("deskb-s\($0)") }
        let first = 100, last = 100 + n + 19
        report("\(n) sessions\(note): displays :\(first)-:\(last), 640x480 waiting desktops over \(scaleUsers.count) users, started one by one")
        let socket = root.appendingPathComponent("scale.sock").path
        let (process, _) = try launchDaemon(named: "scale", socket: socket, config: """
            [limits]
            max_sessions_per_user = \(n / scaleUsers.count + 1)
            displays = "\(first)-\(last)"
            starts_per_minute = 0
            [daemon]
            log_level = "notice"
            [sessions]
            default_desktop = "bench"
            default_geometry = "640x480"
            """)
        let pid = process.processIdentifier
        let live = { self.userProcesses(of: scaleUsers) }
        defer {
            _ = try? Run.of(deskctl, ["kill", "--all", "--socket", socket])
            process.terminate()
            process.waitUntilExit()
            for leftover in live() { kill(leftover, SIGKILL) }
        }
        let fresh = residentMiB(pid)
        // The host's own slowdown, apart from deskd's: a raw Xtigervnc started right after each
        // of the first ten starts and each of the last ten, so it meets the host as those starts
        // did. A shared machine's slow spells come and go (on this one, a start of Xtigervnc
        // itself went from 45 to 95 ms for a few seconds, with or without deskd): a baseline taken
        // before or after the ramp would miss them.
        let rawFile = try passwordFile(for: users[0])
        let early = { (index: Int) in index < 10 }, late = { (index: Int) in index >= n - 10 }
        // By the index of the start each follows: with fewer than 20 sessions the two tens overlap.
        var rawBeside: [(index: Int, seconds: Double)] = []

        var latencies: [Double] = [], sessions: [Session] = []
        var at: [Int: Checkpoint] = [:]
        for index in 0..<n {
            let start = now()
            let run = try Run.of(deskctl, ["start", "--user", scaleUsers[index % scaleUsers.count].name, "--json", "--socket", socket])
            guard run.status == 0, let session = try? JSONDecoder.desk.decode(Session.self, from: Data(run.stdout.utf8)),
                  waitForHandshake(session.endpoint) else {
                throw Options.Usage("start \(index + 1) of \(n) failed: \(run.stdout)")
            }
            latencies.append(now() - start)
            sessions.append(session)
            if early(index) || late(index) { rawBeside += try rawStarts(1, passwordFile: rawFile).map { (index, $0) } }
            if index + 1 == checkpoint || index + 1 == n { at[index + 1] = try measure(socket: socket, pid: pid, sessions: index + 1) }
        }
        let displays = Set(sessions.map(\.display))
        var probed = 0
        for session in sessions where (try? Run.of(deskctl, ["probe", session.display.description, "--socket", socket]))?.status == 0 { probed += 1 }
        let above99 = sessions.filter { $0.display.number > 99 }.count
        report("  \(sessions.count)/\(n) started, \(displays.count) distinct displays, \(above99) above :99, \(probed) answer probe (goal: all)")

        guard let small = at[checkpoint], let large = at[n] else { return }
        let ratio = { (a: Double, b: Double) in String(format: "%.2f× at %d", a / b, checkpoint) }
        row("deskctl list --all, \(checkpoint) sessions", Stats(values: small.list))
        row("deskctl list --all, \(n) sessions", Stats(values: large.list),
            ratio(large.listMedian, small.listMedian) + " (goal < 10 ms, ≤ 1.3×)")
        row("deskctl list --all --json, \(n)", Stats(values: large.json), ratio(Stats(values: large.json).median, Stats(values: small.json).median))
        row("deskctl status, \(n) sessions", Stats(values: large.status), ratio(Stats(values: large.status).median, Stats(values: small.status).median))
        let memory = { (label: String, value: Double, note: String) in
            self.report("  " + label.padding(toLength: 38, withPad: " ", startingAt: 0) + String(format: "%7.1f MiB", value) + "   " + note)
        }
        memory("deskd resident memory, fresh", fresh, "")
        memory("deskd resident memory, \(checkpoint) sessions", small.residentMiB, "")
        memory("deskd resident memory, \(n) sessions", large.residentMiB,
               String(format: "%.0f KiB per session (goal < 48 MiB in all)", (large.residentMiB - fresh) * 1024 / Double(n)))
        for (count, point) in [(checkpoint, small), (n, large)] {
            report("  " + "deskd CPU over \(options.idleSeconds) s idle, \(count)".padding(toLength: 38, withPad: " ", startingAt: 0)
                   + String(format: "%8.2f %%", point.idleCPUPercent) + "   of one core" + (count == n ? " (goal < 1 %)" : ""))
        }
        let firstStarts = Stats(values: Array(latencies.prefix(10))), lastStarts = Stats(values: Array(latencies.suffix(10)))
        row("start, the first 10", firstStarts)
        row("start, the last 10", lastStarts, String(format: "%.2f× the first (goal ≤ 1.2×)", lastStarts.median / firstStarts.median))
        let rawEarly = Stats(values: rawBeside.filter { early($0.index) }.map(\.seconds))
        let rawLate = Stats(values: rawBeside.filter { late($0.index) }.map(\.seconds))
        row("raw Xtigervnc, beside the first 10", rawEarly)
        row("raw Xtigervnc, beside the last 10", rawLate, String(format: "%.2f× the first: the host's share of the slowdown", rawLate.median / rawEarly.median))
        // Each start over the raw one right after it, so a slow spell weighs on both sides of a
        // pair; the last ten pairs against the first ten.
        let pairRatio = { (chosen: (Int) -> Bool) in
            Stats(values: rawBeside.filter { chosen($0.index) }.map { latencies[$0.index] / $0.seconds }).median
        }
        let own = pairRatio(late) / pairRatio(early)
        report(String(format: "  the last starts against the first, each over its raw Xtigervnc: %.2f× (deskd's own; goal ≤ 1.2×)", own))

        Thread.sleep(forTimeInterval: 1.5)
        let dry = try Run.of(deskctl, ["reap", "--idle", "1s", "--dry-run", "--json", "--socket", socket])
        let named = (try? JSONDecoder.desk.decode([Session].self, from: Data(dry.stdout.utf8)).count) ?? 0
        row("deskctl reap --dry-run, \(n) idle", Stats(values: [dry.seconds]), "\(named) named")
        let start = now()
        let killAll = try Run.of(deskctl, ["kill", "--all", "--socket", socket])
        while !live().isEmpty && now() - start < 60 { usleep(5_000) }
        let killed = now() - start, left = live().count
        row("kill --all, \(n), until no process", Stats(values: [killed]), "\(left) processes left, exit \(killAll.status)")
        // Its floor, in the same run: as many raw Xtigervnc (the same size), SIGKILLed at once
        // and reaped. deskd ends each desktop's processes too, and records each end.
        let floor = try rawKillFloor(n, from: last + 1, passwordFile: rawFile, signal: SIGKILL)
        row("SIGKILL of \(n) raw Xtigervnc, reaped", Stats(values: [floor]),
            String(format: "kill --all is %.2f× this floor (goal ≤ 1.2×)", killed / floor))
        // deskd ends a desktop with SIGTERM (its programs may save their work; Xtigervnc cleans
        // up), as a person would: the same for raw Xtigervnc, to show what that costs by itself.
        let graceful = try rawKillFloor(n, from: last + 1, passwordFile: rawFile, signal: SIGTERM)
        row("SIGTERM of \(n) raw Xtigervnc, reaped", Stats(values: [graceful]),
            String(format: "kill --all is %.2f× this", killed / graceful))
    }

    /// Seconds to end `count` raw Xtigervnc at once with `signal` and reap every one, once all
    /// answer; displays from `first`.
    func rawKillFloor(_ count: Int, from first: Int, passwordFile: String, signal: Int32) throws -> Double {
        let displays = first..<(first + count)
        defer { for display in displays { stopRaw(display) } }
        for display in displays { _ = try launchRaw(display, as: users[0], passwordFile: passwordFile, geometry: try Geometry(parsing: "640x480")) }
        for display in displays where !waitForRaw(display) { throw Options.Usage("raw Xtigervnc :\(display) did not answer") }
        let start = now()
        let pids = displays.compactMap { rawServers[$0] }
        for pid in pids { kill(pid, signal) }
        for pid in pids { waitpid(pid, nil, 0) }
        let seconds = now() - start
        for display in displays {
            rawServers[display] = nil
            XLockFile.reclaim(Display(display))
        }
        return seconds
    }

    /// Seconds from launching raw Xtigervnc to its handshake, `count` times on the raw displays.
    func rawStarts(_ count: Int, passwordFile: String) throws -> [Double] {
        try (0..<count).map { _ in
            let display = rawDisplays.lowerBound, start = now()
            _ = try launchRaw(display, as: users[0], passwordFile: passwordFile)
            guard waitForRaw(display) else { throw Options.Usage("raw Xtigervnc did not answer") }
            let seconds = now() - start
            stopRaw(display)
            return seconds
        }
    }

    struct Checkpoint {
        var list: [Double]
        var json: [Double]
        var status: [Double]
        var residentMiB: Double
        var idleCPUPercent: Double
        var listMedian: Double { Stats(values: list).median }
    }

    /// What an admin waits for and what deskd costs, with `sessions` live.
    func measure(socket: String, pid: pid_t, sessions: Int) throws -> Checkpoint {
        var point = Checkpoint(list: [], json: [], status: [], residentMiB: 0, idleCPUPercent: 0)
        for _ in 0..<options.listRuns {
            point.list.append(try Run.of(deskctl, ["list", "--all", "--socket", socket]).seconds)
            point.json.append(try Run.of(deskctl, ["list", "--all", "--json", "--socket", socket]).seconds)
            point.status.append(try Run.of(deskctl, ["status", "--socket", socket]).seconds)
        }
        point.residentMiB = residentMiB(pid)
        let before = cpuSeconds(pid), idle = Double(options.idleSeconds)
        Thread.sleep(forTimeInterval: idle)
        point.idleCPUPercent = (cpuSeconds(pid) - before) / idle * 100
        return point
    }
}
