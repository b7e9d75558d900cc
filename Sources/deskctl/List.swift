import ArgumentParser
import DeskCore

extension Deskctl {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List your sessions, or everyone's with --all (admins).")

        @OptionGroup var connection: ConnectionOptions

        @Flag(help: "Every user's sessions (admins only; others see their own).")
        var all = false

        @Flag(help: "Print JSON: an object with the sessions and, for --all, the foreign displays.")
        var json = false

        func run() throws {
            try reporting(json: json) {
                let response = try connection.send(.list(ListRequest(all: all)))
                let sessions = response.sessions ?? []
                if json {
                    try printJSON(SessionList(sessions: sessions, foreign: response.foreign ?? []))
                    return
                }
                if sessions.isEmpty {
                    print(all ? "No sessions." : "You have no sessions. Start one with: deskctl start")
                } else {
                    print(SessionTable.render(sessions, colour: colourOnStdout))
                }
                if let foreign = response.foreign, !foreign.isEmpty {
                    print("\nForeign displays (not deskd's, left alone):")
                    for entry in foreign { print("  \(entry.display)  \(TerminalText.escape(entry.reason))") }
                }
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one session.")

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The session's display, for example :3.")
        var display: String

        @Flag(help: "Print the session object as JSON, with how to connect.")
        var json = false

        func validate() throws { _ = try parseDisplay(display) }

        func run() throws {
            try reporting(json: json) {
                let response = try connection.send(.show(ShowRequest(display: try parseDisplay(display))))
                guard let session = response.sessions?.first else { throw Failure.incompleteReply(lacking: "a session") }
                if json {
                    try printJSON(ConnectableSession(session: session, connect: response.connect))
                    return
                }
                print(SessionTable.render([session], colour: colourOnStdout))
                print("\nSession \(session.id): \(session.server.viewerProgram) pid \(session.pid), \(session.endpointDescription)\(session.desktopPid.map { ", desktop pid \($0)" } ?? "").")
                if let connect = response.connect {
                    print("\nConnect: \(TerminalText.escape(connect.sshTunnel))\n         then: \(connect.viewer)")
                }
            }
        }
    }
}
