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

            With --for bob,carol the link opens only in a browser logged in to deskd's web portal as one \
            of those accounts (the portal's address is the gateway's, /): a link forwarded to anyone else \
            opens nothing, and stays unused for the right person.

            deskctl url --shares :3 lists the links to :3 not yet used and the browsers showing it, each \
            with its share id; deskctl url --revoke --share ID :3 takes back that one share (its link, or \
            the browser it opened) and leaves the others.

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

        @Option(help: "With --revoke: take back only this share (its id as --shares lists it).")
        var share: String?

        @Flag(help: "List the session's unused links and the browsers its links opened, with their share ids.")
        var shares = false

        @Option(name: .customLong("for"), help: "Only these accounts may use the link, logged in to the portal: bob,carol.")
        var viewers: String?

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
            if share != nil && !revoke {
                throw ValidationError("--share names the share --revoke takes back; add --revoke, or leave out --share.")
            }
            if let share, !UrlRequest.isPlausibleShare(share) {
                throw ValidationError("'\(share)' is not a share id; deskctl url --shares \(display) lists them (12 letters, digits, - and _).")
            }
            if shares && (revoke || viewOnly || viewers != nil) {
                throw ValidationError("--shares only lists; leave out --revoke, --view-only and --for.")
            }
            if revoke && viewers != nil {
                throw ValidationError("--for names who may use a new link; --revoke takes links back. Use one of them.")
            }
            if let viewers, viewerNames(viewers).isEmpty {
                throw ValidationError("--for takes account names separated by commas, such as --for bob,carol.")
            }
        }

        private func viewerNames(_ text: String) -> [String] {
            text.split(separator: ",").map { String($0.filter { $0 != " " }) }.filter { !$0.isEmpty }
        }

        func run() throws {
            try reporting(json: json) {
                if shares {
                    let response = try connection.send(.url(UrlRequest(display: try parseDisplay(display), action: .shares)))
                    guard let list = response.shares else { throw Failure.incompleteReply(lacking: "the shares") }
                    if json { return try printJSON(list) }
                    if list.isEmpty { return print("\(display): no unused link and no browser.") }
                    print(ShareTable.render(list))
                    return
                }
                if revoke {
                    let response = try connection.send(.url(UrlRequest(display: try parseDisplay(display), action: .revoke(share: share))))
                    guard let revoked = response.revoked else { throw Failure.incompleteReply(lacking: "what was revoked") }
                    if json {
                        try printJSON(revoked)
                    } else {
                        print("\(revoked.display): \(revoked.summary).")
                    }
                    return
                }
                let seconds = try IdleDuration.seconds(parsing: ttl)
                let response = try connection.send(.url(UrlRequest(display: try parseDisplay(display),
                                                                   action: .mint(viewOnly: viewOnly, ttlSeconds: seconds, viewers: viewers.map(viewerNames) ?? []))))
                guard let link = response.link else { throw Failure.incompleteReply(lacking: "a link") }
                if json {
                    try printJSON(link)
                    return
                }
                print(link.url)
                let what = link.viewOnly ? "A view-only link" : "A link"
                let forWhom = link.viewers.map { " for \($0.joined(separator: ", ")) (logged in to the portal)" } ?? ""
                writeToStandardError("\(what) to \(link.display)\(forWhom): it opens once, within \(ttl); share \(link.share ?? "?").\n")
            }
        }
    }
}
