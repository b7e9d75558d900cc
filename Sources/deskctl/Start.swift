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

        @Flag(help: "Run the desktop on a compute node of the cluster, as a Slurm job submitted as the user, reached through this host's gateway (deskd.toml's [slurm]).")
        var slurm = false

        @Option(help: "With --slurm: the partition (default: the site's, then Slurm's).")
        var partition: String?

        @Option(help: "With --slurm: the job's time limit as Slurm writes it, such as 4:00:00 or 1-00:00:00 (default: the site's).")
        var time: String?

        @Option(help: "With --slurm: generic resources, such as gpu:1.")
        var gres: String?

        @Option(help: "With --slurm: the account the job is charged to.")
        var account: String?

        @Option(help: "With --slurm: the cores the desktop's job asks for (sbatch --cpus-per-task).")
        var cores: Int?

        @Flag(help: "Print the session as JSON, password and how to connect included.")
        var json = false

        var slurmOptions: SlurmOptions? {
            slurm ? SlurmOptions(partition: partition, time: time, gres: gres, account: account, cores: cores) : nil
        }

        func validate() throws {
            if let geometry {
                do { _ = try Geometry(parsing: geometry) } catch { throw ValidationError(error.message) }
            }
            if let depth {
                do { _ = try ColorDepth.validate(depth) } catch { throw ValidationError(error.message) }
            }
            if let display { _ = try parseDisplay(display) }
            if !slurm, let flag = [("--partition", partition), ("--time", time), ("--gres", gres), ("--account", account), ("--cores", cores.map(String.init))].first(where: { $0.1 != nil })?.0 {
                throw ValidationError("\(flag) is for a desktop on the cluster; add --slurm, or leave out \(flag).")
            }
            if let options = slurmOptions {
                do { _ = try options.checked() } catch { throw ValidationError(error.message) }
            }
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
                    linkTTLSeconds: web ? try ttl.map { text in try IdleDuration.seconds(parsing: text) } ?? BrowserLink.defaultTTLSeconds : nil,
                    slurm: slurmOptions
                )))
                guard let session = response.sessions?.first else { throw Failure.incompleteReply(lacking: "a session") }
                if json {
                    try printJSON(ConnectableSession(session: session, connect: response.connect, link: response.link))
                    return
                }
                if let job = session.slurm {
                    if session.state == .queued || session.state == .starting {
                        let why = job.reason.map { " (\(TerminalText.escape($0)))" } ?? ""
                        print("Submitted \(session.display) for \(TerminalText.escape(session.user)) as Slurm job \(job.jobId), \(session.state.rawValue)\(why); deskctl list \(session.display) follows it.")
                    } else {
                        print("Started \(session.display) for \(TerminalText.escape(session.user)) on \(TerminalText.escape(job.node ?? "?")) (Slurm job \(job.jobId), \(session.desktop), \(session.geometry)" + (job.timeLimit.map { ", time limit \($0)" } ?? "") + ").")
                    }
                } else {
                    print("Started \(session.display) for \(TerminalText.escape(session.user)) (\(session.server.viewerProgram) pid \(session.pid), \(session.endpointDescription), \(session.desktop), \(session.geometry)).")
                }
                switch session.server.viewerAccess {
                case .password: print("Password: \(session.password ?? "(not shown)")")
                case .ownersSocket: print("Password: none; this desktop's socket is its owner's alone, and its VNC server asks none.")
                }
                if let connect = response.connect {
                    print("Connect:  \(TerminalText.escape(connect.sshTunnel))")
                    print("          then: \(connect.viewer)")
                }
                if web {
                    if let link = response.link {
                        print("Browser:  \(link.url)")
                        print("          opens once, within \(ttl ?? "\(BrowserLink.defaultTTLSeconds)s")")
                    } else if session.state == .queued || session.state == .starting {
                        print("Browser:  no link yet: the desktop is not running yet; deskctl url \(session.display) makes one once it is.")
                    } else {
                        print("Browser:  no link: the session was no longer running when its link was to be made; see deskctl logs \(session.display).")
                    }
                }
            }
        }
    }
}
