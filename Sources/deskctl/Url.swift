import ArgumentParser
import DeskCore

extension Deskctl {
    struct Url: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "url",
            abstract: "Print a one-time link that opens a session's desktop in a browser.",
            discussion: """
            The link goes through deskd's own gateway ([web] in deskd.toml) and opens once, within --ttl \
            (default 60s): a second use, or a use after that, opens nothing. Its secret rides after the '#', \
            which browsers never send to a server. The VNC password stays on the server: the gateway logs \
            in to Xvnc itself. With --view-only the link watches: every key, pointer and clipboard message \
            from the browser is dropped, whatever the browser sends. Hand such a link to a colleague, for \
            example: deskctl url :3 --view-only --ttl 10m. Owners and admins only.

            deskctl url --revoke :3 takes every link to :3 back: none not yet used opens anything \
            any more, and every browser showing the desktop is closed. deskctl passwd does the same \
            (a view-only password, to view-only links), and so does the session's end. A link an \
            admin made opens only while its maker is still an admin (a browser it already opened stays \
            until revoked).
            """
        )

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The session's display, for example :3.")
        var display: String

        @Flag(help: "A link that shows the desktop but takes no input.")
        var viewOnly = false

        @Flag(help: "Take back every unused link to the session and close the browsers showing it.")
        var revoke = false

        @Option(help: "How long the link waits for its one use: 90s, 10m, 1h (at most 24h).")
        var ttl = "60s"

        @Flag(help: "Print the link as JSON.")
        var json = false

        func validate() throws {
            _ = try parseDisplay(display)
            do { _ = try IdleDuration.seconds(parsing: ttl) } catch { throw ValidationError(error.message) }
            if revoke && viewOnly {
                throw ValidationError("--revoke takes back every link to the session, view-only ones too; leave out --view-only.")
            }
        }

        func run() throws {
            try reporting(json: json) {
                if revoke {
                    let response = try connection.send(.url(UrlRequest(display: try parseDisplay(display), action: .revoke)))
                    guard let revoked = response.revoked else { throw Failure.incompleteReply(lacking: "what was revoked") }
                    if json {
                        try printJSON(revoked)
                    } else {
                        print("\(revoked.display): \(revoked.summary).")
                    }
                    return
                }
                let seconds = try IdleDuration.seconds(parsing: ttl)
                let response = try connection.send(.url(UrlRequest(display: try parseDisplay(display), action: .mint(viewOnly: viewOnly, ttlSeconds: seconds))))
                guard let link = response.link else { throw Failure.incompleteReply(lacking: "a link") }
                if json {
                    try printJSON(link)
                    return
                }
                print(link.url)
                let what = link.viewOnly ? "A view-only link" : "A link"
                writeToStandardError("\(what) to \(link.display): it opens once, within \(ttl).\n")
            }
        }
    }
}
