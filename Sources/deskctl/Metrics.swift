import ArgumentParser
import DeskCore

extension Deskctl {
    struct Metrics: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "metrics",
            abstract: "Print deskd's metrics in Prometheus's text format (admins).",
            discussion: """
            Sessions by state, starts and their latency, start failures and session ends by reason, \
            viewers (native and browser), free displays, the browser gateway's connections, tokens and \
            refusals, and deskd's memory. No metric names a user. The same text is served at /metrics \
            where [metrics] listen is set in deskd.toml; this command needs no listener.
            """
        )

        @OptionGroup var connection: ConnectionOptions

        func run() throws {
            try reporting(json: false) {
                guard let text = try connection.send(.metrics).metrics else {
                    throw Failure.incompleteReply(lacking: "metrics")
                }
                print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
            }
        }
    }
}
