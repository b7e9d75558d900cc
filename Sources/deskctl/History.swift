import ArgumentParser
import DeskCore
import Foundation

extension Deskctl {
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the audit trail: who started, killed, reaped or re-keyed which session.",
            discussion: "Admins see every entry; users see what they did and what was done to their sessions."
        )

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "Only entries by or about this user.")
        var user: String?

        @Option(help: "Only entries since then: a duration back (2h, 1d) or a date (2026-11-22, 2026-11-22T14:30:00Z).")
        var since: String?

        @Flag(help: "Print the entries as JSON.")
        var json = false

        func validate() throws {
            if let since {
                do { _ = try PointInTime.parse(since, now: Date()) } catch { throw ValidationError(error.message) }
            }
        }

        func run() throws {
            try reporting(json: json) {
                let from = try since.map { text throws(DeskError) in try PointInTime.parse(text, now: Date()) }
                let entries = try connection.send(Request(command: .history, user: user, since: from?.timeIntervalSince1970)).history ?? []
                if json {
                    try printJSON(entries)
                    return
                }
                if entries.isEmpty {
                    print("No history\(since.map { " since \($0)" } ?? "").")
                    return
                }
                print(HistoryTable.render(entries))
            }
        }
    }
}
