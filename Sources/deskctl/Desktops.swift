import ArgumentParser
import DeskCore

extension Deskctl {
    struct Desktops: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "desktops",
            abstract: "List the desktops this host can start (for start --desktop), and what the others need.",
            discussion: """
                A desktop is installed when every program its template needs is on the sessions' PATH; \
                for one that is not, the list says what is missing and how an admin installs it.
                """
        )

        @OptionGroup var connection: ConnectionOptions

        @Flag(help: "Print the desktops as JSON.")
        var json = false

        func run() throws {
            try reporting(json: json) {
                let response = try connection.send(.desktops)
                guard let desktops = response.desktops else {
                    throw Failure.incompleteReply(lacking: "the desktops")
                }
                if json {
                    try printJSON(desktops)
                    return
                }
                print(DesktopTable.render(desktops))
                if let cluster = response.cluster { print("\n" + PartitionTable.render(cluster)) }
            }
        }
    }
}
