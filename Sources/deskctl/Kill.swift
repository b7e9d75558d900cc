import ArgumentParser
import DeskCore

extension Deskctl {
    struct Kill: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "kill",
            abstract: "Kill sessions: one display, all of a user's, or all you may kill.",
            discussion: "Xvnc, the desktop and everything they started are ended (SIGTERM, then SIGKILL after a grace period)."
        )

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The display to kill, for example :3.")
        var display: String?

        @Option(help: "Kill every session of this user (yourself, or anyone if you are an admin).")
        var user: String?

        @Flag(help: "Kill every session you may kill (admins: all of them).")
        var all = false

        @Flag(help: "Print the killed sessions as JSON.")
        var json = false

        func validate() throws {
            let chosen = [display != nil, user != nil, all].filter { $0 }.count
            guard chosen == 1 else { throw ValidationError("say which sessions to kill: a display (:N), --user NAME or --all (exactly one).") }
            if let display { _ = try parseDisplay(display) }
        }

        func run() throws {
            try reporting(json: json) {
                let killed = try connection.send(.kill(try display.map { .display(try parseDisplay($0)) } ?? user.map(KillRequest.user) ?? .all)).sessions ?? []
                if json {
                    try printJSON(killed)
                } else if killed.isEmpty {
                    print("No sessions to kill.")
                } else {
                    for session in killed { print("Killed \(session.display) (\(TerminalText.escape(session.user))).") }
                }
            }
        }
    }
}
