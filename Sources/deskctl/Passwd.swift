import ArgumentParser
import DeskCore

extension Deskctl {
    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "passwd",
            abstract: "Give a running session a new VNC password, without restarting it.",
            discussion: """
            Xvnc checks the password file at every login, so the next viewer needs the new password; \
            native viewers already connected stay connected. A new full password also revokes any view-only \
            one, every unused browser link to the session, and closes every browser showing it. With \
            --view-only, the full password is kept and a new view-only password (watch, no input) is set; \
            view-only links and browsers are taken back, the others stay.
            """
        )

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The session's display, for example :3.")
        var display: String

        @Flag(help: "Set a new view-only password and keep the full one.")
        var viewOnly = false

        @Flag(help: "Print the session as JSON, with the new password and how to connect.")
        var json = false

        func validate() throws {
            _ = try parseDisplay(display)
        }

        func run() throws {
            try reporting(json: json) {
                let response = try connection.send(.passwd(PasswdRequest(display: try parseDisplay(display), viewOnly: viewOnly)))
                guard let session = response.sessions?.first else { throw Failure.incompleteReply(lacking: "a session") }
                if json {
                    try printJSON(ConnectableSession(session: session, connect: response.connect))
                    return
                }
                if let revoked = response.revoked, revoked.links + revoked.browsers > 0 {
                    writeToStandardError("\(revoked.display): \(revoked.summary).\n")
                }
                if viewOnly {
                    print("New view-only password for \(session.display) (\(TerminalText.escape(session.user))): \(session.viewOnlyPassword ?? "(not shown)")")
                } else {
                    print("New password for \(session.display) (\(TerminalText.escape(session.user))): \(session.password ?? "(not shown)")")
                }
            }
        }
    }
}
