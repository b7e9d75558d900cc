import ArgumentParser
import DeskClient
import DeskCore
import FoundationEssentials
import Glibc

@main
struct Deskctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deskctl",
        abstract: "Start, list and kill TigerVNC desktops managed by deskd.",
        discussion: """
            Users act on their own sessions; root and members of deskd's admin group on everyone's. \
            Identity comes from the kernel (SO_PEERCRED), never from the command line.

            Exit status: 0 done; 1 deskd refused the request (the reason is on stderr); \
            2 the command line is wrong; 3 deskd cannot be reached. With --json, a failure prints {"error": {"code": …, "message": …}} on stdout instead.

            Environment: DESKD_SOCKET names the control socket (default /run/deskd/deskd.sock); \
            NO_COLOR turns colour off.
            """,
        version: DeskVersion.current,
        // Each subcommand names itself (commandName): else ArgumentParser derives the name with
        // String(describing:) on the type, whose casts scan every protocol conformance in the
        // binary, subcommand by subcommand, on every run: more than half of deskctl's start-up.
        subcommands: [Start.self, List.self, Show.self, Kill.self, Reap.self, Probe.self, Passwd.self, Url.self, History.self, Logs.self, Status.self, Desktops.self, Metrics.self, Extend.self]
    )

    /// Like ArgumentParser's main, but a usage error is one line on stderr, as every other
    /// refusal is ("deskctl: <sentence>"), instead of the error, the usage and a help hint.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .success || error is ExitCode { exit(withError: error) }
            let sentence = UsageSentence.rewrite(message(for: error), subcommand: UsageSentence.subcommand(in: CommandLine.arguments))
            // No command was parsed, so look for the flag itself: a script that asked for JSON reads JSON.
            if JSONOutput.isRequested(by: CommandLine.arguments) {
                JSONFailure(code: ExitCodes.usageCode, message: sentence).print()
            } else {
                writeToStandardError("deskctl: \(TerminalText.escape(sentence))\n")
            }
            Glibc.exit(ExitCodes.usage)
        }
    }
}

extension ParsableCommand {
    /// Runs `body`, turning a `Failure` into "deskctl: <sentence>" on stderr, or with `json` into
    /// `{"error": …}` on stdout, and its exit code.
    func reporting(json: Bool, _ body: () throws -> Void) throws {
        do { try body() } catch let failure as Failure {
            if json {
                JSONFailure(code: failure.errorCode, message: failure.message, cause: failure.cause).print()
            } else {
                // deskd's sentences can quote a user's log or a requested name: escape before printing.
                writeToStandardError("deskctl: \(TerminalText.escape(failure.message))\n")
            }
            throw ExitCode(failure.code)
        }
    }
}

func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder.desk
    encoder.outputFormatting.insert(.prettyPrinted)
    print(JSONOutput.collapsingEmptyArrays(TerminalText.escapeJSON(String(decoding: try encoder.encode(value), as: UTF8.self))))
}

/// Colour only for a terminal, and never with NO_COLOR or TERM=dumb.
var colourOnStdout: Bool {
    SessionTable.wantsColour(environment: ProcessInfo.processInfo.environment, isTerminal: isatty(STDOUT_FILENO) != 0)
}

func parseDisplay(_ text: String) throws -> Display {
    do { return try Display(parsing: text) } catch {
        throw ValidationError(error.message)
    }
}
