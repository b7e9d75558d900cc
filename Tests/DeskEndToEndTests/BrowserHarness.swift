import Foundation
import Glibc
import Testing

/// A real headless Chromium opening a desktop in noVNC: Tests/browser/desktop_in_browser.py,
/// run as a subprocess, one JSON object back. The gateway's tests open `deskctl url` links
/// with it; BrowserHarnessTests prove it against Debian's websockify.
enum BrowserHarness {
    static let script = TestEnvironment.repository.appendingPathComponent("Tests/browser/desktop_in_browser.py").path
    static let chromium = "/usr/bin/chromium"

    static let skipReason: Comment = "browser tests need Debian's chromium and novnc and Playwright for Python in /opt/deskd-test-venv; scripts/install-deps installs them (`Tests/browser/desktop_in_browser.py check` says what is missing)"

    /// Chromium, noVNC and a Python with Playwright are all there (the harness's own `check`).
    static let isReady: Bool = {
        guard access(chromium, X_OK) == 0, access("/usr/share/novnc/vnc.html", R_OK) == 0 else { return false }
        guard let result = try? CommandResult.run("/usr/bin/python3", [script, "check"]) else { return false }
        return result.status == 0
    }()

    /// What the page showed; the fields of the harness's JSON.
    struct Outcome: Decodable {
        let url: String?
        let connected: Bool
        let refused: Bool
        let width: Int
        let height: Int
        let distinctColours: Int
        let nonBlank: Bool
        let status: String?
        let httpStatus: Int?
        let pageText: String?
        let typed: String?
        let screenshot: String?
        let console: [String]
        let webSockets: [WebSocket]
        let error: String?
        /// With `stay`: seconds into the stay at which the server closed the connection (nil: it did not).
        let droppedAfter: Double?
        let statusAfterStay: String?

        /// One WebSocket the page opened: frames each way, and how it ended.
        struct WebSocket: Decodable {
            let url: String
            let framesSent: Int
            let framesReceived: Int
            let closed: Bool
            let error: String?
        }

        /// Everything worth printing when an expectation fails.
        var summary: String {
            "connected \(connected), refused \(refused), \(width)x\(height), \(distinctColours) colours, status \(status ?? "none"), "
                + "HTTP \(httpStatus.map(String.init) ?? "none"), error \(error ?? "none"), console \(console.suffix(5))"
        }
    }

    struct Run {
        let outcome: Outcome
        /// The harness's exit status: 0 when the outcome is the one asked for.
        let status: Int32
        let stderr: String
    }

    /// Opens `url` in Chromium. `type` is typed into the canvas, then Enter.
    static func open(_ url: String, screenshot: String? = nil, type: String? = nil, timeout: Double = 20,
                     expectRefusal: Bool = false, ignoreViewOnly: Bool = false, viewport: String? = nil,
                     networkNamespace: String? = nil) throws -> Run {
        var arguments = [script, "open", url, "--timeout", String(timeout)]
        if let viewport { arguments += ["--viewport", viewport] }
        if let screenshot { arguments += ["--screenshot", screenshot] }
        if let type { arguments += ["--type", type] }
        if expectRefusal { arguments.append("--expect-refusal") }
        if ignoreViewOnly { arguments.append("--ignore-view-only") }
        // A browser on another machine of the test bed (the Slurm lab's login machine): its network only.
        if let networkNamespace {
            return try outcome(of: CommandResult.run("/usr/sbin/ip", ["netns", "exec", networkNamespace, "/usr/bin/python3"] + arguments))
        }
        return try outcome(of: CommandResult.run("/usr/bin/python3", arguments))
    }

    private static func outcome(of result: CommandResult) throws -> Run {
        guard let outcome = try? JSONDecoder().decode(Outcome.self, from: Data(result.stdout.utf8)) else {
            throw HarnessFailed(status: result.status, output: result.stdout + result.stderr)
        }
        return Run(outcome: outcome, status: result.status, stderr: result.stderr)
    }

    /// A browser that stays on a desktop while the test looks at the server (`--stay`).
    final class Staying {
        private let process = Process()
        private let out = Pipe(), err = Pipe()

        init(_ url: String, seconds: Double) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [BrowserHarness.script, "open", url, "--viewport", "640x480", "--stay", String(seconds)]
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        /// Waits for the browser to be connected and staying (or for the harness to end without).
        func waitUntilConnected() -> Bool {
            var seen = Data()
            let handle = err.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return false }
                seen.append(chunk)
                if String(decoding: seen, as: UTF8.self).contains("stayStarted") { return true }
            }
        }

        /// The harness's report, once the stay ends (the server dropped it, or the time ran out).
        func finish() throws -> Run {
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return try BrowserHarness.outcome(of: CommandResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                                                                stderr: String(decoding: stderr, as: UTF8.self)))
        }
    }

    struct HarnessFailed: Error, CustomStringConvertible {
        let status: Int32
        let output: String
        var description: String { "the browser harness printed no result (exit \(status)):\n\(output)" }
    }
}
