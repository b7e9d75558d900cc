import ArgumentParser
import DeskCore

extension Deskctl {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show deskd's version, uptime, socket, configuration file and session counts.",
            discussion: "Exit status 3 if deskd cannot be reached, so it doubles as a health check."
        )

        @OptionGroup var connection: ConnectionOptions

        @Flag(help: "Print the status as JSON.")
        var json = false

        func run() throws {
            try reporting(json: json) {
                guard let status = try connection.send(.status).status else {
                    throw Failure.incompleteReply(lacking: "a status")
                }
                if json {
                    try printJSON(status)
                    return
                }
                print(StatusText.render(status))
            }
        }
    }
}
