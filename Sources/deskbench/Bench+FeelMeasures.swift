import Foundation
import Glibc

/// 8. What a person feels, in Chromium (scripts/bench-feel, which says how): the click on Start
/// in the portal to the desktop's first drawn frame in noVNC, Open alone on a running desktop,
/// and a key typed into the xterm to its changed pixels; each against the by-hand path (raw
/// Xtigervnc and an xterm started at the click, Debian's websockify and noVNC page), rounds
/// alternated in this run. Skipped, with the reason, where the browser or the venv is missing.
extension Bench {
    func feel() throws {
        let script = URL(fileURLWithPath: options.products).appendingPathComponent("../../scripts/bench-feel").standardized.path
        guard access(script, X_OK) == 0 else {
            report("what a person feels: skipped, \(script) is not there (run deskbench from the source tree)")
            return
        }
        for program in ["/usr/bin/chromium", "/usr/bin/websockify", "/usr/bin/xterm", "/opt/deskd-test-venv/bin/python3"]
        where access(program, X_OK) != 0 {
            report("what a person feels: skipped, \(program) is not installed (scripts/install-deps)")
            return
        }
        let user = users[0]
        let password = "Bench-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        guard try Run.of("/bin/sh", ["-c", "printf '%s:%s\\n' \"$1\" \"$2\" | /usr/sbin/chpasswd", "sh", user.name, password]).status == 0 else {
            throw Options.Usage("chpasswd failed for \(user.name)")
        }
        defer { _ = try? Run.of("/usr/bin/passwd", ["--lock", user.name]) }
        report("what a person feels, in Chromium, as \(user.name) (\(options.feelRounds) rounds each, alternated; scripts/bench-feel)")

        // Its progress goes to our stderr; its JSON (no password in it) comes back on a pipe.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        // The password in the environment, not the command line every local user can read.
        process.environment = ProcessInfo.processInfo.environment.merging(["DESKD_FEEL_PASSWORD": password]) { $1 }
        process.arguments = ["--base", "http://127.0.0.1:\(webPort)", "--user", user.name, "--socket", socket,
                             "--deskctl", deskctl, "--rounds", String(options.feelRounds), "--raw-display", String(rawDisplays.lowerBound), "--json"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // A watchdog: a browser step that hangs past every timeout of the script's own still ends
        // the run (SIGTERM: the script ends what it started, the browser included).
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGTERM) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(180 + 90 * options.feelRounds), execute: watchdog)
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        guard process.terminationStatus == 0, let answer = try? JSONSerialization.jsonObject(with: output) as? [String: Any],
              let rounds = answer["rounds"] as? [String: [[String: [String: Any]]]], let keys = answer["keys"] as? [String: [Double]],
              let ratios = answer["ratios"] as? [String: Double] else {
            throw Options.Usage("scripts/bench-feel failed (exit status \(process.terminationStatus)); its reason is above")
        }
        func spans(_ path: String, _ kind: String, from: String = "click", to: String = "frame") -> Stats {
            Stats(values: (rounds[path] ?? []).compactMap { round in
                guard let a = round[kind]?[from] as? Double, let b = round[kind]?[to] as? Double else { return nil }
                return (b - a) / 1000
            })
        }
        func p95(_ stats: Stats) -> String { "p95 " + format(stats.percentile(0.95)) }
        let byHandStart = spans("byHand", "start"), deskdStart = spans("deskd", "start")
        row("by hand: Xvnc + xterm, vnc.html", byHandStart, p95(byHandStart))
        row("click Start → first frame", deskdStart, p95(deskdStart)
            + String(format: "; %.2f× by hand (goal ≤ 0.6×)", ratios["startToPixels"] ?? .nan))
        let byHandAlone = spans("byHand", "alone"), deskdAlone = spans("deskd", "alone")
        row("by hand: vnc.html on a running Xvnc", byHandAlone, p95(byHandAlone))
        row("click Open → first frame", deskdAlone, p95(deskdAlone)
            + String(format: "; %.2f× by hand (goal ≤ 0.6×)", ratios["openAlone"] ?? .nan))
        let byHandKeys = Stats(values: (keys["byHand"] ?? []).map { $0 / 1000 }), deskdKeys = Stats(values: (keys["deskd"] ?? []).map { $0 / 1000 })
        row("key → pixels, xterm, by hand", byHandKeys, p95(byHandKeys))
        row("key → pixels, xterm, through deskd", deskdKeys, p95(deskdKeys)
            + String(format: "; %.2f× by hand (goal ≤ 1.05×)", ratios["keyToPixels"] ?? .nan))
        if let sway = keys["swayDeskd"], let swayByHand = keys["swayByHand"], !sway.isEmpty, !swayByHand.isEmpty {
            let byHand = Stats(values: swayByHand.map { $0 / 1000 }), through = Stats(values: sway.map { $0 / 1000 })
            row("key → pixels, foot on sway, by hand", byHand, p95(byHand))
            row("key → pixels, foot on sway, deskd", through, p95(through)
                + String(format: "; %.2f× by hand (goal ≤ 1.05×)", ratios["keyToPixelsSway"] ?? .nan))
        } else {
            report("  key → pixels, foot on sway: skipped, sway, wayvnc and foot are not all installed here")
        }
        // Where the time goes, step by step (medians of each step's own span).
        if let whereTo = answer["where"] as? [String: Any] {
            for (path, title) in [("byHand", "by hand"), ("deskd", "deskd")] {
                let files = (whereTo[path + "Files"] as? [String: Any])?["median"] as? Double ?? .nan
                let network = (whereTo[path + "FromNetwork"] as? [String: Any])?["median"] as? Double ?? .nan
                let alone = (whereTo[path + "AloneFromNetwork"] as? [String: Any])?["median"] as? Double ?? .nan
                report("  \(title): after the click (medians; the viewer loads \(Int(files)) files, "
                       + "\(Int(network)) from the network, \(Int(alone)) when opened again):")
                for step in whereTo[path] as? [[String: Any]] ?? [] {
                    let median = (step["median"] as? Double).map { format($0 / 1000) } ?? "n/a"
                    report("    " + (step["step"] as? String ?? "?").padding(toLength: 64, withPad: " ", startingAt: 0) + median.leftPadded(10))
                }
            }
        }
    }
}
