import DeskPOSIX
import ArgumentParser
import DeskCore
import FoundationEssentials

extension Deskctl {
    struct Extend: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extend",
            abstract: "Make a cluster desktop's time limit longer.",
            discussion: """
            A desktop on the cluster (start --slurm) ends at its job's time limit. deskctl extend :3 --by 1h \
            makes it an hour longer, as far as the site allows: [slurm] extend_max in deskd.toml is how much \
            longer a desktop may be made in all (0s: not at all). deskd raises the limit as Slurm's operator, \
            which the user cannot. Owners and admins.
            """
        )

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The cluster desktop's display, for example :3.")
        var display: String

        @Option(help: "How much longer: 30m, 1h, 2h30m (Slurm counts in minutes).")
        var by: String

        @Flag(help: "Print the session as JSON.")
        var json = false

        func validate() throws {
            _ = try parseDisplay(display)
            let seconds: Int
            do { seconds = try IdleDuration.seconds(parsing: by) } catch { throw ValidationError(error.message) }
            guard seconds >= 60 else { throw ValidationError("--by is at least a minute (Slurm counts in minutes), such as --by 30m.") }
        }

        func run() throws {
            try reporting(json: json) {
                let seconds = try IdleDuration.seconds(parsing: by)
                let response = try connection.send(.extend(ExtendRequest(display: try parseDisplay(display), seconds: seconds)))
                guard let session = response.sessions?.first else { throw Failure.incompleteReply(lacking: "the session") }
                if json { return try printJSON(session) }
                let ends = session.slurm?.endsAt.map { " It now ends at \(WallClock.local.formatNamed($0))." } ?? ""
                print("\(session.display) is \(SlurmTime(seconds: seconds)) longer (job \(session.slurm?.jobId ?? "?")).\(ends)")
            }
        }
    }
}
