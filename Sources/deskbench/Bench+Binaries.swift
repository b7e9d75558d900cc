import DeskCore
import Foundation
import Glibc

extension Bench {
    /// 0. What an install puts on disk and what one deskctl run costs: the release binaries as
    /// built and as `make install` strips them, whether ICU's data is in them, and deskctl
    /// --version against a static Swift binary that only prints, alternated pair by pair.
    func binaries() throws {
        report("release binaries (as built → as installed, stripped)")
        for name in ["deskctl", "deskd"] {
            let path = options.products + "/" + name
            let stripped = root.appendingPathComponent(name + ".stripped").path
            guard try Run.of("/usr/bin/strip", ["-o", stripped, path]).status == 0 else {
                throw Options.Usage("strip could not read \(path); build it first (scripts/bench does)")
            }
            let icu = Self.contains(path, "icudt") ? "ICU data linked in" : "no ICU"
            let goal = name == "deskd" ? " (goal: no ICU, ≤ 25 MB)" : ""
            report("  " + name.padding(toLength: 38, withPad: " ", startingAt: 0)
                   + Self.megabytes(path).leftPadded(10) + "   → " + Self.megabytes(stripped) + " stripped; " + icu + goal)
        }

        // The floor: a Swift program that only prints, linked as `swiftc -static-stdlib` links it
        // (scripts/bench builds it beside the products).
        let hello = options.products + "/deskbench-hello"
        guard access(hello, X_OK) == 0 else { throw Options.Usage("\(hello) is missing; scripts/bench builds it") }
        let pairs = options.pairs * 20
        report("one process, start to exit (\(pairs) pairs; CPU time is user + system)")
        var floorCPU: [Double] = [], deskCPU: [Double] = [], floorWall: [Double] = [], deskWall: [Double] = []
        var cpuRatios: [Double] = [], wallRatios: [Double] = []
        for index in 0...pairs {
            let floor = try Run.of(hello, [])
            let desk = try Run.of(deskctl, ["--version"])
            guard desk.status == 0, floor.status == 0 else { throw Options.Usage("deskctl --version or the hello binary failed") }
            // The first pair pays for cold caches.
            guard index > 0 else { continue }
            floorCPU.append(floor.cpuSeconds)
            deskCPU.append(desk.cpuSeconds)
            floorWall.append(floor.seconds)
            deskWall.append(desk.seconds)
            // rusage counts in microseconds; a run that shows none is left out of the ratios.
            if floor.cpuSeconds > 0 { cpuRatios.append(desk.cpuSeconds / floor.cpuSeconds) }
            wallRatios.append(desk.seconds / floor.seconds)
        }
        row("static Swift hello, CPU (floor)", Stats(values: floorCPU))
        row("deskctl --version, CPU", Stats(values: deskCPU), String(format: "%.2f× floor (goal ≤ 1.50×)", Stats(values: cpuRatios).median))
        row("static Swift hello, wall", Stats(values: floorWall))
        row("deskctl --version, wall", Stats(values: deskWall), String(format: "%.2f× floor", Stats(values: wallRatios).median))
    }

    static func megabytes(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "?" }
        return String(format: "%.1f MB", Double(info.st_size) / 1e6)
    }

    /// Whether the file holds `needle` anywhere: ICU's data carries its name (icudt74…) even stripped.
    static func contains(_ path: String, _ needle: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: path) else { return false }
        return data.withUnsafeBytes { bytes in
            let pattern = Array(needle.utf8)
            guard bytes.count >= pattern.count else { return false }
            var index = 0
            while index <= bytes.count - pattern.count {
                if bytes[index] == pattern[0] && (1..<pattern.count).allSatisfy({ bytes[index + $0] == pattern[$0] }) { return true }
                index += 1
            }
            return false
        }
    }
}
