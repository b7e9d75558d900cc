import ArgumentParser
import DeskCore

extension Deskctl {
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start",
            abstract: "Start a desktop (yours, or another user's if you are an admin).",
            discussion: "Prints the display, the VNC password and how to connect. The password is shown only here."
        )

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "Start the desktop for this user (admins only; default: yourself).")
        var user: String?

        @Option(help: "Use this display, for example :5 (default: the lowest free one).")
        var display: String?

        @Option(help: "Screen size as WIDTHxHEIGHT (default 1920x1080).")
        var geometry: String?

        @Option(help: "Colour depth: 16, 24 or 32 (default 24).")
        var depth: Int?

        @Option(help: "The desktop template, for example xterm or openbox; deskctl desktops lists those this host can start.")
        var desktop: String?

        @Flag(help: "Also print a one-time link that opens the desktop in a browser, through deskd's gateway (as deskctl url does).")
        var web = false

        @Option(help: "With --web: how long the link waits for its one use: 90s, 10m, 1h (at most 24h; default 60s).")
        var ttl: String?

        @Flag(help: "Print the session as JSON, password and how to connect included.")
        var json = false

        func validate() throws {
            if let geometry {
                do { _ = try Geometry(parsing: geometry) } catch { throw ValidationError(error.message) }
            }
            if let depth {
                do { _ = try ColorDepth.validate(depth) } catch { throw ValidationError(error.message) }
            }
            if let display { _ = try parseDisplay(display) }
            if let ttl {
                guard web else { throw ValidationError("--ttl is for the link of --web; add --web, or leave out --ttl.") }
                do { _ = try IdleDuration.seconds(parsing: ttl) } catch { throw ValidationError(error.message) }
            }
        }

        func run() throws {
            try reporting(json: json) {
                let response = try connection.send(.start(StartRequest(
                    user: user, display: try display.map(parseDisplay), geometry: try geometry.map { try Geometry(parsing: $0) },
                    depth: depth, desktop: desktop,
                    linkTTLSeconds: web ? try ttl.map { text in try IdleDuration.seconds(parsing: text) } ?? BrowserLink.defaultTTLSeconds : nil
                )))
                guard let session = response.sessions?.first else { throw Failure.incompleteReply(lacking: "a session") }
                if json {
                    try printJSON(ConnectableSession(session: session, connect: response.connect, link: response.link))
                    return
                }
                print("Started \(session.display) for \(TerminalText.escape(session.user)) (Xvnc pid \(session.pid), \(session.endpointDescription), \(session.desktop), \(session.geometry)).")
                print("Password: \(session.password ?? "(not shown)")")
                if let connect = response.connect {
                    print("Connect:  \(TerminalText.escape(connect.sshTunnel))")
                    print("          then: \(connect.viewer)")
                }
                if web {
                    if let link = response.link {
                        print("Browser:  \(link.url)")
                        print("          opens once, within \(ttl ?? "\(BrowserLink.defaultTTLSeconds)s")")
                    } else {
                        print("Browser:  no link: the session was no longer running when its link was to be made; see deskctl logs \(session.display).")
                    }
                }
            }
        }
    }
}
