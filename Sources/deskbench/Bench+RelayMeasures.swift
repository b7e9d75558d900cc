import DeskCore
import DeskLinux
import Foundation
import Glibc

extension Bench {
    /// 6. A desktop in the browser: deskd's gateway against Debian's websockify relaying the same
    /// session's socket, in one run: whole-screen Raw updates (bytes per second and the relay's
    /// CPU per byte) and the round trip of a 1×1 update, with Xvnc's own socket as the floor.
    /// With `desktop: "sway"`, the same of a Wayland desktop, whose relay the gateway reads
    /// message by message (ServerMessageFilter) where it passes Xvnc's unread; wayvnc's socket
    /// asks no password, so the direct path and websockify's log in with None.
    func browserRelays(desktop: String? = nil) throws {
        guard access(Self.websockify, X_OK) == 0 else {
            report("browser relay: skipped, websockify is not installed (apt-get install websockify)")
            return
        }
        let version = (try? Run.of("/usr/bin/dpkg-query", ["-W", "-f", "${Version}", "websockify"]).stdout) ?? "?"
        let (session, _) = try deskctlStart(users[0], desktop: desktop)
        defer { _ = try? deskctlKill(session.display) }
        guard let socketPath = session.rfbSocket, session.password != nil || session.server.viewerAccess == .ownersSocket else { throw Options.Usage("the relay's session has no socket") }
        let password = session.password
        let server = session.server.viewerProgram
        let websockify = try startWebsockify(target: socketPath)
        defer { stopForkingRelay(websockify.pid) }
        // The floor of any relay's CPU per byte on this machine: socat copying the same socket
        // to TCP, a read and a write per piece, no WebSocket. What a relay costs above it is its own.
        let socat = access(Self.socat, X_OK) == 0 ? try startSocat(target: socketPath) : nil
        defer { if let socat { stopForkingRelay(socat.pid) } }

        let direct = { () throws -> RFBBenchClient in try RFBBenchClient(DirectStream(path: socketPath), password: password) }
        let gateway = { () throws -> RFBBenchClient in
            let link = try Run.of(self.deskctl, ["url", session.display.description, "--json", "--socket", self.socket])
            guard link.status == 0, let url = try? JSONDecoder.desk.decode(BrowserLink.self, from: Data(link.stdout.utf8)).url,
                  let token = url.split(separator: "=").last else { throw Options.Usage("deskctl url failed: \(link.stdout)") }
            let cookie = try WebSocketStream.exchange(token: String(token), port: self.webPort)
            return try RFBBenchClient(WebSocketStream(port: self.webPort, cookie: cookie), password: nil)
        }
        let relayed = { () throws -> RFBBenchClient in try RFBBenchClient(WebSocketStream(port: websockify.port, cookie: nil), password: password) }
        let copied = socat.map { socat in { () throws -> RFBBenchClient in try RFBBenchClient(DirectStream(port: socat.port), password: password) } }
        let probe = try direct()
        let frame = probe.width * probe.height * probe.bytesPerPixel
        report("browser relay\(!session.server.relayReadsServerMessages ? "" : " (a Wayland desktop, \(session.desktop): the gateway reads the desktop's messages)"): deskd's gateway vs websockify \(version), one \(probe.width)x\(probe.height) session, "
               + "\(options.relayUpdates) whole-screen Raw updates (\(frame / 1_000_000) MB each) × \(options.relayRounds) rounds, \(options.relayPings) round trips")

        // Throughput and CPU per byte, the relays alternated round by round.
        var rates: [String: [Double]] = [:], cpuPerGB: [String: [Double]] = [:]
        for round in 0..<options.relayRounds {
            var order: [(String, () throws -> RFBBenchClient, pid_t?)] = [("gateway", gateway, daemonPID), ("websockify", relayed, websockify.pid)]
            if round % 2 == 1 { order.reverse() }
            order.insert(("direct", direct, nil), at: 0)
            if let socat, let copied { order.append(("socat", copied, socat.pid)) }
            for (name, connect, relay) in order {
                let client = try connect()
                for _ in 0..<2 { try client.update() }   // warm-up: buffers, the relay's first allocations
                let cpuBefore = relay.map(cpuOfTree) ?? 0, start = now()
                var bytes = 0
                for _ in 0..<options.relayUpdates { bytes += try client.update() }
                let seconds = now() - start, cpu = (relay.map(cpuOfTree) ?? 0) - cpuBefore
                rates[name, default: []].append(Double(bytes) / seconds)
                if relay != nil { cpuPerGB[name, default: []].append(cpu / (Double(bytes) / 1e9)) }
            }
        }
        // Round by round, as every ratio here: the gateway's figure over websockify's from the same round.
        let perRound = { (figures: [String: [Double]]) in
            Stats(values: zip(figures["gateway"] ?? [], figures["websockify"] ?? []).map { $0 / $1 }).median
        }
        let throughput = { (value: Double) in String(format: "%.0f MB/s", value / 1e6) }
        let cpuTime = { (value: Double) in String(format: "%.2f s", value) }
        row("\(server)'s socket, no relay (ceiling)", Stats(values: rates["direct"] ?? []), unit: throughput)
        row("deskd gateway", Stats(values: rates["gateway"] ?? []),
            String(format: "%.2f× websockify's bytes/s (goal ≥ 1×)", perRound(rates)), unit: throughput)
        row("websockify", Stats(values: rates["websockify"] ?? []), unit: throughput)
        row("deskd gateway, CPU per GB moved", Stats(values: cpuPerGB["gateway"] ?? []),
            String(format: "%.2f× websockify's (goal ≤ 0.35×)", perRound(cpuPerGB)), unit: cpuTime)
        row("websockify, CPU per GB moved", Stats(values: cpuPerGB["websockify"] ?? []), unit: cpuTime)
        if socat != nil {
            let overFloor = Stats(values: zip(cpuPerGB["gateway"] ?? [], cpuPerGB["socat"] ?? []).map { $0 / $1 }).median
            row("socat, a bare copy (floor), CPU per GB", Stats(values: cpuPerGB["socat"] ?? []),
                String(format: "the gateway is %.2f× this; websockify %.2f×", overFloor,
                       Stats(values: zip(cpuPerGB["websockify"] ?? [], cpuPerGB["socat"] ?? []).map { $0 / $1 }).median), unit: cpuTime)
        } else {
            report("  socat, a bare copy (floor): skipped, socat is not installed (apt-get install socat)")
        }

        // Round trips of a 1×1 update, in blocks alternated across the three paths.
        var trips: [String: [Double]] = [:]
        // Closed before websockify is stopped: it waits for the children serving open connections.
        var paths: [(String, RFBBenchClient)] = [("direct", try direct()), ("gateway", try gateway()), ("websockify", try relayed())]
        defer { paths.removeAll() }
        for (_, client) in paths { for _ in 0..<20 { try client.update(width: 1, height: 1) } }
        let block = 25
        for blockIndex in 0..<max(1, options.relayPings / block) {
            for (name, client) in blockIndex % 2 == 0 ? paths : paths.reversed() {
                for _ in 0..<block {
                    let start = now()
                    try client.update(width: 1, height: 1)
                    trips[name, default: []].append(now() - start)
                }
            }
        }
        let floor = Stats(values: trips["direct"] ?? []).median
        row("round trip, 1×1 update: \(server)'s socket", Stats(values: trips["direct"] ?? []))
        row("… through deskd's gateway", Stats(values: trips["gateway"] ?? []),
            String(format: "adds %.2f ms (goal < 1 ms)", (Stats(values: trips["gateway"] ?? []).median - floor) * 1000))
        row("… through websockify", Stats(values: trips["websockify"] ?? []),
            String(format: "adds %.2f ms", (Stats(values: trips["websockify"] ?? []).median - floor) * 1000))
    }

    static let websockify = "/usr/bin/websockify"

    /// Debian's websockify on a free loopback port, relaying to the session's socket, as an
    /// OOD-style setup would run it (one process per connection, forked). Root reads the socket.
    func startWebsockify(target: String) throws -> (pid: pid_t, port: Int) {
        let port = try Self.freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.websockify)
        process.arguments = ["--unix-target=\(target)", "127.0.0.1:\(port)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 {
            if let probe = try? SocketReader.connectTCP(port: port) {
                _ = probe   // closed on release; websockify logs and forgets a connection that sends nothing
                return (process.processIdentifier, port)
            }
            usleep(10_000)
        }
        process.terminate()
        throw Options.Usage("websockify did not listen on 127.0.0.1:\(port)")
    }

    static let socat = "/usr/bin/socat"

    /// Debian's socat on a free loopback port, a child per connection copying it to `target`
    /// in pieces as large as the gateway's reads (256 KiB).
    func startSocat(target: String) throws -> (pid: pid_t, port: Int) {
        let port = try Self.freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.socat)
        process.arguments = ["-b", "262144", "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork", "UNIX-CONNECT:\(target)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 {
            // A connection made and closed at once costs socat a child that connects to the
            // desktop and ends: the desktop sees a viewer come and go.
            if ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen]).contains(where: { $0.localPort == port }) { return (process.processIdentifier, port) }
            usleep(10_000)
        }
        process.terminate()
        throw Options.Usage("socat did not listen on 127.0.0.1:\(port)")
    }

    /// SIGTERM to a relay that forks a child per connection (websockify, socat) and to those
    /// children, SIGKILL to what is left after 2 s.
    func stopForkingRelay(_ pid: pid_t) {
        let family = children(of: pid) + [pid]
        for member in family { kill(member, SIGTERM) }
        let deadline = now() + 2
        while now() < deadline && family.contains(where: ProcFS.isAlive) { usleep(10_000) }
        for member in family where ProcFS.isAlive(member) { kill(member, SIGKILL) }
    }

    private func children(of pid: pid_t) -> [pid_t] {
        ProcFS.allPIDs().filter { child in
            guard let stat = ProcFS.readText("/proc/\(child)/stat"), let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(close, offsetBy: 2)...].split(separator: " ").dropFirst().first.flatMap { pid_t($0) } == pid
        }
    }

    /// CPU seconds of a process and its live children: websockify serves each connection in a
    /// child it forks, whose time reaches the parent's only once it has been reaped.
    ///
    /// In nanoseconds, from each thread's schedstat: /proc's stat counts in ticks of 10 ms, and a
    /// round of 250 MB costs a relay some tens of them.
    func cpuOfTree(_ pid: pid_t) -> Double {
        children(of: pid).reduce(threadSeconds(pid)) { $0 + threadSeconds($1) }
    }

    /// CPU seconds of every thread of `pid` now running (the first field of schedstat).
    private func threadSeconds(_ pid: pid_t) -> Double {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return threads.reduce(0) { total, thread in
            let nanoseconds = ProcFS.readText("/proc/\(pid)/task/\(thread)/schedstat")?.split(separator: " ").first.flatMap { Double($0) } ?? 0
            return total + nanoseconds / 1e9
        }
    }

    static func freeLoopbackPort() throws -> Int {
        guard let port = InternetSocketAddress.freeLoopbackPort() else { throw Options.Usage("no free loopback port") }
        return port
    }
}
