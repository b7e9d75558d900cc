import DeskPOSIX
import ArgumentParser
import DeskCore

extension Deskctl {
    struct Logs: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "logs",
            abstract: "Show a session's Xvnc and desktop output and how each ended, also after the session is gone.",
            discussion: """
                A display names the session running there, or else the one that ended there last; a session id \
                (from deskctl show, or history) names any session whose logs are kept. deskd keeps the logs of \
                running sessions and of each user's last sessions.keep_logs ended ones. Owners read their own; admins anyone's.
                """
        )

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "A display (:3) or a session id.")
        var session: String

        @Option(help: "The most lines to show of each process's output (1 to \(SessionLogs.maxLines)).")
        var lines = SessionLogs.defaultLines

        @Flag(help: "Print the logs as JSON.")
        var json = false

        func validate() throws {
            guard (1...SessionLogs.maxLines).contains(lines) else {
                throw ValidationError("--lines must be from 1 to \(SessionLogs.maxLines), not \(lines).")
            }
            if !SessionSummary.isSessionID(session), (try? Display(parsing: session)) == nil {
                throw ValidationError("'\(session)' is neither a display (:3) nor a session id (32 hex digits, from deskctl show or history).")
            }
        }

        func run() throws {
            try reporting(json: json) {
                let byID = SessionSummary.isSessionID(session)
                let response = try connection.send(.logs(LogsRequest(target: byID ? .session(session) : .display(try parseDisplay(session)), lines: lines)))
                guard let logs = response.logs else { throw Failure.incompleteReply(lacking: "the logs") }
                if json {
                    try printJSON(logs)
                } else {
                    print(logs.render(clock: .local))
                }
            }
        }
    }
}
