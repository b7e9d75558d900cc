import ArgumentParser
import DeskCore

extension Deskctl {
    struct Reap: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reap",
            abstract: "Kill sessions that have had no viewer for a while (for cron and timers).",
            discussion: """
            A session nobody ever connected to counts as idle from its start. Users reap their own \
            sessions, admins anyone's. Exit status 0 means the pass ran, whether or not it killed anything.
            """
        )

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "Idle at least this long: 90s, 30m, 2h, 1d.")
        var idle: String

        @Flag(help: "Only say what would be killed.")
        var dryRun = false

        @Option(help: "Only this user's sessions.")
        var user: String?

        @Flag(help: "Print the sessions reaped (or that would be) as JSON.")
        var json = false

        func validate() throws {
            do { _ = try IdleDuration.seconds(parsing: idle) } catch { throw ValidationError(error.message) }
        }

        func run() throws {
            try reporting(json: json) {
                let seconds = try IdleDuration.seconds(parsing: idle)
                let sessions = try connection.send(.reap(ReapRequest(idleSeconds: seconds, user: user, dryRun: dryRun))).sessions ?? []
                if json {
                    try printJSON(sessions)
                    return
                }
                if sessions.isEmpty { print("No session has been idle for \(idle).") }
                for session in sessions {
                    let idleFor = SessionTable.compactDuration(seconds: session.idleSeconds)
                    print("\(dryRun ? "Would kill" : "Killed") \(session.display) (\(TerminalText.escape(session.user))), no viewer for \(idleFor).")
                }
            }
        }
    }

    struct Probe: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "probe",
            abstract: "Check over RFB that a session's desktop really answers.",
            discussion: "deskd logs in with the session's own password; exit status 1 if the server does not answer in time."
        )

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The session's display, for example :3.")
        var display: String

        @Option(help: "Seconds to wait for the handshake (1-30).")
        var timeout: Int = 3

        @Flag(help: "Print the probe report as JSON.")
        var json = false

        func validate() throws {
            _ = try parseDisplay(display)
            guard (1...30).contains(timeout) else { throw ValidationError("--timeout must be between 1 and 30 seconds.") }
        }

        func run() throws {
            try reporting(json: json) {
                let response = try connection.send(.probe(ProbeRequest(display: try parseDisplay(display), timeoutSeconds: timeout)))
                guard let report = response.probe else { throw Failure.incompleteReply(lacking: "a probe report") }
                guard report.answered else {
                    throw Failure(message: "display \(report.display) did not complete an RFB handshake within \(timeout)s; it is unresponsive.",
                                  code: ExitCodes.refused, errorCode: ExitCodes.unresponsiveCode)
                }
                if json {
                    try printJSON(report)
                } else {
                    let rtt = report.roundTripMilliseconds.map { DecimalText.format($0, places: 1) + " ms" } ?? "?"
                    print("\(report.display): RFB \(report.protocolVersion ?? "?"), \"\(TerminalText.escape(report.desktopName ?? ""))\", \(report.width ?? 0)x\(report.height ?? 0), answered in \(rtt).")
                }
            }
        }
    }
}
