import DeskCore
import DeskLinux
import Foundation
import Glibc

extension Bench {
    /// Cluster desktops (run on the Slurm lab's login machine by scripts/bench-slurm):
    ///
    /// 1. `deskctl start --slurm` to a desktop answering RFB, against `sbatch` of a job that
    ///    runs raw Xtigervnc, polled from here until its RFB greeting: Slurm's own latency (the
    ///    submission, the scheduler's pass, slurmd starting the job) is in both, alternated.
    /// 2. Whole-screen updates through deskd's gateway from a node's desktop (the hop, the job's
    ///    relay) against the same from a desktop on this host.
    func clusterMeasures() throws {
        let user = users[0]
        report("deskbench: cluster desktops through \(socket), \(options.clusterRounds) rounds")
        report("")
        report("  " + "measure".padding(toLength: 38, withPad: " ", startingAt: 0) + "median".leftPadded(10) + "   " + "p10–p90".padding(toLength: 22, withPad: " ", startingAt: 0) + "ratio")

        var deskd: [Double] = [], raw: [Double] = []
        for round in 0..<options.clusterRounds {
            let order: [Bool] = round % 2 == 0 ? [true, false] : [false, true]
            for viaDeskd in order {
                if viaDeskd { deskd.append(try clusterStart(user)) } else { raw.append(try rawSlurmStart(user)) }
            }
        }
        let ratios = Stats(values: zip(deskd, raw).map { $0 / $1 })
        row("sbatch + raw Xtigervnc, to RFB (floor)", Stats(values: raw))
        row("deskctl start --slurm, to ready", Stats(values: deskd), String(format: "%.2f× raw", ratios.median))

        // The relay: a node's desktop against one on this host, both through the gateway.
        let (local, _) = try deskctlStart(user)
        defer { _ = try? deskctlKill(local.display) }
        let cluster = try clusterSession(user)
        defer { _ = try? deskctlKill(cluster.display) }
        func gateway(_ session: Session) throws -> RFBBenchClient {
            let link = try Run.of(deskctl, ["url", session.display.description, "--json", "--socket", socket])
            guard link.status == 0, let url = try? JSONDecoder.desk.decode(BrowserLink.self, from: Data(link.stdout.utf8)).url,
                  let token = url.split(separator: "=").last else { throw Options.Usage("deskctl url failed: \(link.stdout)") }
            let cookie = try WebSocketStream.exchange(token: String(token), port: webPort)
            return try RFBBenchClient(WebSocketStream(port: webPort, cookie: cookie), password: nil)
        }
        var rates: [String: [Double]] = [:]
        for round in 0..<max(3, options.relayRounds) {
            var order = [("local", local), ("cluster", cluster)]
            if round % 2 == 1 { order.reverse() }
            for (name, session) in order {
                let client = try gateway(session)
                for _ in 0..<2 { try client.update() }
                let start = now()
                var bytes = 0
                for _ in 0..<options.relayUpdates { bytes += try client.update() }
                rates[name, default: []].append(Double(bytes) / (now() - start))
            }
        }
        let throughput = { (value: Double) in String(format: "%.0f MB/s", value / 1e6) }
        let relayRatio = Stats(values: zip(rates["cluster"] ?? [], rates["local"] ?? []).map { $0 / $1 }).median
        row("gateway, a desktop on this host", Stats(values: rates["local"] ?? []), unit: throughput)
        row("gateway, a node's desktop (hop, relay)", Stats(values: rates["cluster"] ?? []), String(format: "%.2f× local (goal ≥ 0.9×)", relayRatio), unit: throughput)
    }

    /// One `deskctl start --slurm` to its answer (the job reported its desktop answering RFB),
    /// then its kill, waited for so the next round finds the node free.
    private func clusterStart(_ user: UserAccount) throws -> Double {
        let start = now()
        let session = try clusterSession(user)
        let seconds = now() - start
        _ = try deskctlKill(session.display)
        if let id = session.slurm?.jobId { waitUntilEnded(job: id) }
        return seconds
    }

    /// Until squeue says the job ended, so the next round finds its node free (both kinds alike).
    private func waitUntilEnded(job id: String) {
        for _ in 0..<500 {
            let state = (try? Run.of("/usr/bin/squeue", ["--noheader", "--states=all", "--jobs=\(id)", "--format=%T"]).stdout.trimming()) ?? ""
            if state.isEmpty || SlurmJob.endStates.contains(state) { return }
            usleep(20_000)
        }
    }

    private func clusterSession(_ user: UserAccount) throws -> Session {
        let run = try Run.of(deskctl, ["start", "--slurm", "--user", user.name, "--json", "--socket", socket])
        guard run.status == 0, let session = try? JSONDecoder.desk.decode(Session.self, from: Data(run.stdout.utf8)), session.state == .ready else {
            throw Options.Usage("deskctl start --slurm did not give a ready desktop: \(run.stdout)")
        }
        return session
    }

    /// sbatch, as the user, of a job that execs raw Xtigervnc on TCP; polled from here on every
    /// node until one greets in RFB; then scancel.
    private func rawSlurmStart(_ user: UserAccount) throws -> Double {
        let display = 9, port = 5909
        let job = "exec /usr/bin/Xtigervnc :\(display) -rfbport \(port) -SecurityTypes None -nolisten tcp -geometry 1920x1080 -depth 24"
        let start = now()
        let submit = try Run.of("/usr/bin/sbatch", ["--parsable", "--no-requeue", "--export=NONE", "--output=/dev/null",
                                                     "--error=/dev/null", "--job-name=deskbench-raw", "--chdir=/", "--wrap", job], as: user.name)
        guard submit.status == 0, let id = SlurmSubmission.jobID(fromParsable: submit.stdout) else {
            throw Options.Usage("sbatch failed: \(submit.stdout)")
        }
        defer {
            _ = try? Run.of("/usr/bin/scancel", [id], as: user.name)
            waitUntilEnded(job: id)
        }
        let nodes = ["10.77.0.11", "10.77.0.12"]
        let deadline = start + 60
        while now() < deadline {
            for node in nodes where Self.greets(host: node, port: port) { return now() - start }
            usleep(5000)
        }
        throw Options.Usage("raw Xtigervnc of job \(id) did not answer within 60 s")
    }

    /// Whether host:port answers with an RFB greeting within a moment.
    static func greets(host: String, port: Int) -> Bool {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let address = InternetSocketAddress(host: host, port: port), address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else { return false }
        var greeting = [UInt8](repeating: 0, count: 12)
        return recv(fd, &greeting, 12, Int32(MSG_WAITALL)) == 12 && greeting.starts(with: Array("RFB ".utf8))
    }
}
