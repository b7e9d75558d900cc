import DeskPOSIX
import ArgumentParser
import DeskCore
import FoundationEssentials

extension Deskctl {
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "history",
            abstract: "Show the audit trail: who started, killed, reaped or re-keyed which session.",
            discussion: """
                Admins see every entry; users see what they did and what was done to their sessions. \
                Times are local, with their offset from UTC (2026-11-22 14:30:05 +0100); --json gives them in UTC (2026-11-22T13:30:05Z).
                """
        )

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "Only entries by or about this user.")
        var user: String?

        @Option(help: ArgumentHelp(
            "Only entries since then: a duration back (2h, 1d) or a local date or time (2026-11-22, '2026-11-22 14:30').",
            discussion: "A time with a zone (2026-11-22T14:30:00Z, '2026-11-22 14:30:00 +0100') means that zone's time; the times history prints can be given back as they are."
        ))
        var since: String?

        @Flag(help: "Print the entries as JSON.")
        var json = false

        func validate() throws {
            if let since {
                do { _ = try PointInTime.parse(since, now: Date(), clock: .local) } catch { throw ValidationError(error.message) }
            }
        }

        func run() throws {
            try reporting(json: json) {
                let from = try since.map { text throws(DeskError) in try PointInTime.parse(text, now: Date(), clock: .local) }
                let entries = try connection.send(.history(HistoryRequest(user: user, since: from))).history ?? []
                if json {
                    try printJSON(entries)
                    return
                }
                if entries.isEmpty {
                    print("No history\(since.map { " since \($0)" } ?? "").")
                    return
                }
                print(HistoryTable.render(entries, clock: .local))
            }
        }
    }
}
