import DeskCore
import Foundation
import Glibc
import Testing

/// The scripting contract: every verb's real `--json` output, from a real deskd and a real
/// desktop, checked against its schema in docs/schema by Debian's python3-jsonschema.
extension EndToEnd {
@Suite(.enabled(if: JSONSchemaCheck.isAvailable, JSONSchemaCheck.missing))
struct JSONContractTests {
    @Test func everyVerbPrintsWhatItsSchemaSays() throws {
        let jay = try TestUsers.ensure("deskt-jay")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(jay) }
        let started = try daemon.deskctl(["start", "--user", jay.name, "--json"])
        try JSONSchemaCheck.expectValid(started, "start")
        let display = try started.decode(Session.self).display.description

        // start, show and passwd: the session plus how to connect.
        let shown = try daemon.deskctl(["show", display, "--json"], as: jay.name)
        try JSONSchemaCheck.expectValid(shown, "start")
        #expect(shown.stdout.contains("\"connect\"") && shown.stdout.contains("ssh -L "))
        try JSONSchemaCheck.expectValid(daemon.deskctl(["passwd", display, "--json"], as: jay.name), "start")
        try JSONSchemaCheck.expectValid(daemon.deskctl(["passwd", display, "--view-only", "--json"]), "start")

        // list: an object, with foreign displays empty unless an admin asks for --all.
        let own = try daemon.deskctl(["list", "--json"], as: jay.name)
        try JSONSchemaCheck.expectValid(own, "list")
        #expect(try own.decode(SessionList.self).foreign.isEmpty)
        try JSONSchemaCheck.expectValid(daemon.deskctl(["list", "--all", "--json"]), "list")

        try JSONSchemaCheck.expectValid(daemon.deskctl(["probe", display, "--json"]), "probe")
        try JSONSchemaCheck.expectValid(daemon.deskctl(["status", "--json"], as: jay.name), "status")
        let desktops = try JSONSchemaCheck.expectValid(daemon.deskctl(["desktops", "--json"], as: jay.name), "desktops")
        // CI installs xterm and openbox, and no GNOME: the list says so, and what GNOME needs.
        let byName = Dictionary(uniqueKeysWithValues: try desktops.decode([DesktopInfo].self).map { ($0.name, $0) })
        #expect(byName["xterm"]?.installed == true && byName["openbox"]?.installed == true, "\(byName)")
        // auto starts the first of its picks this host has, as read here from the templates and
        // the sessions' PATH: openbox on CI, xfce or gnome where those are installed.
        let pick = try AutoDesktop.expectedPick()
        #expect(byName["auto"]?.starts == pick, "\(byName)")
        #expect(pick.map { byName[$0]?.installed == true } ?? true, "\(byName)")
        if let gnome = byName["gnome"], !gnome.installed {
            #expect(gnome.missing.contains("gnome-session") && gnome.install == "apt-get install gnome-session dbus-x11", "\(gnome)")
            let refused = try daemon.deskctl(["start", "--desktop", "gnome"], as: jay.name)
            #expect(refused.status == 1 && refused.stderr.contains("the desktop 'gnome' is not installed on this host"), "\(refused.stderr)")
        }
        try JSONSchemaCheck.expectValid(daemon.deskctl(["logs", display, "--json"], as: jay.name), "logs")
        try JSONSchemaCheck.expectValid(daemon.deskctl(["reap", "--idle", "1d", "--dry-run", "--json"]), "sessions")
        try JSONSchemaCheck.expectValid(daemon.deskctl(["reap", "--idle", "1s", "--dry-run", "--json"]), "sessions")

        // A probe nobody answers is a failure like any other: one error object, exit 1.
        let xvnc = try #require(try daemon.sessions().first).pid
        kill(xvnc, SIGSTOP)
        let stuck = try daemon.deskctl(["probe", display, "--timeout", "1", "--json"])
        kill(xvnc, SIGCONT)
        try JSONSchemaCheck.expectError(stuck, code: "unresponsive", status: 1)

        let killed = try daemon.deskctl(["kill", display, "--json"], as: jay.name)
        try JSONSchemaCheck.expectValid(killed, "sessions")
        let id = try #require(try killed.decode([Session].self).first).id
        // After the end: the kept logs say how it ended, and history has the end.
        #expect(eventually(10) { (try? daemon.sessions().isEmpty) == true })
        #expect(eventually(10) { (try? daemon.deskctl(["logs", id, "--json"]).decode(SessionLogs.self).session.endedAt) != nil })
        try JSONSchemaCheck.expectValid(daemon.deskctl(["logs", id, "--json"]), "logs")
        let history = try daemon.deskctl(["history", "--json"])
        try JSONSchemaCheck.expectValid(history, "history")
        #expect(try history.decode([AuditEntry].self).contains { $0.command == .ended })
        try JSONSchemaCheck.expectValid(daemon.deskctl(["history", "--json", "--since", "2030-01-01"]), "history")
        try JSONSchemaCheck.expectValid(daemon.deskctl(["kill", "--all", "--json"]), "sessions")
    }

    @Test func everyKindOfFailureIsOneErrorObjectWithTheUsualExitStatus() throws {
        let jay = try TestUsers.ensure("deskt-jay")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(jay) }

        // Refused by deskd: its code, exit 1, and nothing on stderr.
        let missing = try daemon.deskctl(["show", ":77", "--json"])
        try JSONSchemaCheck.expectError(missing, code: "no-such-session", status: 1)
        try JSONSchemaCheck.expectError(daemon.deskctl(["start", "--user", "deskt-nobody-here", "--json"]), code: "unknown-user", status: 1)
        try JSONSchemaCheck.expectError(daemon.deskctl(["history", "--user", "root", "--json"], as: jay.name), code: "permission-denied", status: 1)
        try JSONSchemaCheck.expectError(daemon.deskctl(["logs", ":77", "--json"]), code: "no-such-session", status: 1)
        // A wrong command line: exit 2, for errors ArgumentParser and validate() find alike.
        try JSONSchemaCheck.expectError(daemon.deskctl(["show", ":x", "--json"]), code: "usage", status: 2)
        try JSONSchemaCheck.expectError(daemon.deskctl(["kill", "--json"]), code: "usage", status: 2)
        try JSONSchemaCheck.expectError(daemon.deskctl(["list", "--json", "--no-such-flag"]), code: "usage", status: 2)
        // No deskd there: exit 3.
        let nowhere = try CommandResult.run(TestEnvironment.deskctl, ["status", "--json", "--socket", daemon.root.appendingPathComponent("none.sock").path])
        try JSONSchemaCheck.expectError(nowhere, code: "unreachable", status: 3)

        // Nothing to list is two empty arrays, each written as people and scripts expect it.
        #expect(try daemon.deskctl(["list", "--json"]).stdout == "{\n  \"foreign\" : [],\n  \"sessions\" : []\n}\n")

        // Without --json nothing changed: the sentence on stderr, stdout empty.
        let text = try daemon.deskctl(["show", ":77"])
        #expect(text.status == 1 && text.stdout.isEmpty && text.stderr.hasPrefix("deskctl: "))
        let error = try missing.decode(JSONFailureBody.self).error
        #expect(text.stderr == "deskctl: \(error.message)\n")
    }
}
}

/// What the `auto` desktop starts on this host, worked out from the repository's templates (the
/// ones the daemon under test reads first) independently of deskd: the first of auto.xstartup's
/// `# picks:` whose `# needs:` commands are all executable on the sessions' PATH.
enum AutoDesktop {
    /// sessions.path's default, which the daemons under test keep.
    static let sessionPath = ["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/games", "/usr/games"]

    static func expectedPick() throws -> String? {
        try template("auto").picks.first { pick in
            guard let needs = try? template(pick).needs.commands else { return false }
            return needs.allSatisfy { command in sessionPath.contains { access("\($0)/\(command)", X_OK) == 0 } }
        }
    }

    static func template(_ name: String) throws -> XstartupTemplate {
        let url = TestEnvironment.repository.appendingPathComponent("Templates/\(name).xstartup")
        return XstartupTemplate(name: name, text: try String(contentsOf: url, encoding: .utf8))
    }
}

/// `{"error": {"code", "message"}}`, as the tests read it.
struct JSONFailureBody: Decodable {
    struct Body: Decodable {
        var code: String
        var message: String
    }

    var error: Body
}

/// scripts/validate-json with Debian's python3-jsonschema: the validator scripts/install-deps installs.
enum JSONSchemaCheck {
    static let python = "/usr/bin/python3"
    static let script = TestEnvironment.repository.appendingPathComponent("scripts/validate-json").path
    static let isAvailable = (try? CommandResult.run(python, ["-c", "import jsonschema"]).status) == 0
    static let missing: Comment = "the JSON contract tests need python3-jsonschema; scripts/install-deps installs it"

    /// `result` exited 0 and its stdout is valid against docs/schema/`schema`.json.
    @discardableResult
    static func expectValid(_ result: CommandResult, _ schema: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> CommandResult {
        #expect(result.status == 0, "deskctl failed: \(result.stdout)\(result.stderr)", sourceLocation: sourceLocation)
        try validate(result.stdout, schema, sourceLocation: sourceLocation)
        return result
    }

    /// `result` failed with `status`, printing only an error object with `code`.
    static func expectError(_ result: CommandResult, code: String, status: Int32, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.status == status, "exit status \(result.status): \(result.stdout)", sourceLocation: sourceLocation)
        #expect(result.stderr.isEmpty, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        try validate(result.stdout, "error", sourceLocation: sourceLocation)
        let error = try JSONDecoder().decode(JSONFailureBody.self, from: Data(result.stdout.utf8)).error
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
    }

    static func validate(_ json: String, _ schema: String, sourceLocation: SourceLocation) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("deskctl-\(UUID().uuidString).json")
        try json.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try CommandResult.run(python, [script, schema, file.path])
        #expect(check.status == 0, "not valid against docs/schema/\(schema).json:\n\(check.stderr)\n\(json)", sourceLocation: sourceLocation)
    }
}
