import DeskCore
import Foundation
import Testing

/// docs/schema without root or a daemon: every file is a valid schema, the error codes it allows
/// are deskd's and deskctl's, and what DeskCore encodes fits. The end-to-end JSONContractTests
/// check real deskctl output against the same files.
@Suite(.enabled(if: SchemaValidator.isInstalled, "the JSON Schema checks need python3-jsonschema (apt-get install python3-jsonschema; scripts/install-deps installs it)"))
struct JSONSchemaTests {
    @Test func everySchemaIsAValidDraft202012Schema() throws {
        let check = try SchemaValidator.run([SchemaValidator.script, "--check-schemas"])
        #expect(check.status == 0, "\(check.stderr)")
    }

    @Test func errorCodesAreDeskdsAndDeskctls() throws {
        let schema = try JSONSerialization.jsonObject(with: Data(contentsOf: SchemaValidator.schemas.appendingPathComponent("error.json"))) as? [String: Any]
        let error = (schema?["properties"] as? [String: Any])?["error"] as? [String: Any]
        let code = (error?["properties"] as? [String: Any])?["code"] as? [String: Any]
        let listed = try #require(code?["enum"] as? [String])
        // deskctl's own, for failures deskd never saw (Sources/deskctl/Deskctl.swift, ExitCodes).
        let deskctls = ["usage", "unreachable", "unresponsive"]
        #expect(Set(listed) == Set(DeskError.Code.allCases.map(\.rawValue) + deskctls))
    }

    @Test func whatDeskCoreEncodesFitsTheSchemas() throws {
        let session = Session(
            id: String(repeating: "ab", count: 16), user: "alice", uid: 1001, gid: 1001, display: Display(3),
            endpoint: .unixSocket(path: "/run/deskd/displays/3/rfb.sock"), pid: 42, pidStartTicks: 7, executable: "/usr/bin/Xtigervnc",
            desktopPid: 43, state: .ready, startedAt: Date(timeIntervalSince1970: 0), desktop: "xterm", geometry: .default, depth: 24,
            lastClientAt: Date(timeIntervalSince1970: 60), idleSeconds: 5
        )
        var starting = session
        starting.pid = 0
        starting.state = .starting
        try expectValid(SessionList(sessions: [session, starting], foreign: [ForeignDisplay(display: Display(9), reason: "Xvfb", pid: 812)]), "list")
        try expectValid([session], "sessions")
        try expectValid(ProbeReport(display: Display(3), answered: true, protocolVersion: "3.8", desktopName: "alice's desktop (:3)",
                                    width: 1920, height: 1080, roundTripMilliseconds: 7.7), "probe")
        try expectValid(DaemonStatus(daemonVersion: "0.1.0", pid: 1, startedAt: Date(), uptimeSeconds: 0, socket: "/run/deskd/deskd.sock",
                                     configurationFile: nil, sessions: 1, sessionsByState: ["ready": 1], users: 1,
                                     maxSessionsPerUser: 4, maxSessions: nil), "status")
        var entry = AuditEntry(time: Date(), peerUID: 0, peerPID: 1, peerUser: "root", command: .ended, user: "alice", uid: 1001,
                               display: Display(3), detail: "session=x", ok: true, outcome: "killed by root")
        entry.suppressed = 2
        try expectValid([entry], "history")
        var ended = SessionSummary(session)
        ended.endedAt = Date()
        ended.endReason = "killed"
        try expectValid(SessionLogs(session: ended, processes: [
            ProcessLog(role: .server, exit: "exited with status 0", lines: ["Xvnc TigerVNC"], truncated: false),
            ProcessLog(role: .desktop, exit: nil, lines: [], truncated: true),
        ]), "logs")
        try expectValid(BrowserLink(display: Display(3), url: "https://desk.example.org:8443/open#token=" + String(repeating: "A", count: 43),
                                    expiresAt: Date(), viewOnly: true), "url")
        try expectValid(BrowserLink(display: Display(3), url: "https://desk.example.org/open?token=leaked", expiresAt: Date(), viewOnly: true),
                        "url", valid: false)
        try expectValid(BrowserLink(display: Display(3), url: "https://desk.example.org:8443/open#token=" + String(repeating: "A", count: 43),
                                    expiresAt: Date(), viewOnly: true, share: "AbCd-_012345", viewers: ["bob"]), "url")
        try expectValid(LinkRevocation(display: Display(3), links: 2, browsers: 1, viewOnlyOnly: false), "revoke")
        try expectValid([LinkShare(share: "AbCd-_012345", viewOnly: true, viewers: ["bob", "carol"], issuedBy: "alice", expiresAt: Date(), browsers: 0),
                         LinkShare(share: "Zz9-_0123456", viewOnly: false, viewers: nil, issuedBy: "root", expiresAt: nil, browsers: 2)], "shares")
        try expectValid([LinkShare(share: "short", viewOnly: true, viewers: nil, issuedBy: "alice", expiresAt: nil, browsers: 0)], "shares", valid: false)
        // A refusal, with and without its cause (deskctl --json prints deskd's error body as is).
        struct Failure: Encodable { var error: ErrorBody? }
        for cause: DeskError.Cause? in [nil, .system(operation: "mkdir", path: "/run/deskd/by-id/x", errno: 13, name: "EACCES", text: "Permission denied"),
                                        .system(operation: "pipe", path: nil, errno: 24, name: nil, text: "Too many open files"),
                                        .pam(code: 13, text: "User account has expired"), .configuration(file: "deskd.toml", line: 3, column: nil),
                                        .other("no answer")] {
            try expectValid(Failure(error: Response(error: DeskError(.internalError, "it failed.", cause: cause)).error), "error")
        }
        // Strict enough to notice a shape change: the array list --json used to print fails.
        try expectValid([session], "list", valid: false)
    }

    private func expectValid(_ value: some Encodable, _ schema: String, valid: Bool = true,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-schema-\(UUID().uuidString).json")
        try JSONEncoder.desk.encode(value).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try SchemaValidator.run([SchemaValidator.script, schema, file.path])
        #expect((check.status == 0) == valid, "docs/schema/\(schema).json: \(check.stderr)", sourceLocation: sourceLocation)
    }

}

/// scripts/validate-json, run by Debian's python3 (which has the python3-jsonschema that
/// scripts/install-deps installs) rather than whatever python3 is first on PATH.
enum SchemaValidator {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let schemas = repository.appendingPathComponent("docs/schema")
    static let script = repository.appendingPathComponent("scripts/validate-json").path
    static let python = "/usr/bin/python3"
    static let isInstalled = (try? run(["-c", "import jsonschema"]).status) == 0

    static func run(_ arguments: [String]) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self))
    }
}
