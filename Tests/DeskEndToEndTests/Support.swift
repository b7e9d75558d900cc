import DeskClient
import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// What the end-to-end tests need: root (to start desktops as other users) and real TigerVNC.
enum TestEnvironment {
    static let isRoot = getuid() == 0
    static let hasXvnc = access("/usr/bin/Xtigervnc", X_OK) == 0
    static let canRun = isRoot && hasXvnc
    static let skipReason: Comment = "end-to-end tests need root and Xtigervnc; run them as root after .ci/run installs tigervnc-standalone-server"

    /// deskd and deskctl are built next to the test binary.
    static let products = URL(fileURLWithPath: ProcFS.executable(of: getpid()) ?? CommandLine.arguments[0]).deletingLastPathComponent()
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var deskd: String { products.appendingPathComponent("deskd").path }
    static var deskctl: String { products.appendingPathComponent("deskctl").path }
}

/// Pieces of the test desktops' scripts.
enum TestDesktop {
    /// A shell line that opens the display in the background and keeps it open: deskd counts
    /// a session ready once a process of it holds an X connection, so a test desktop that is
    /// about something else (keyrings, forks, logs) reaches its display first, as a real one does.
    static let holdsDisplay = "xprop -root -spy >/dev/null 2>&1 &"
}

/// Throwaway accounts, created on first use and reused by later runs. Every name starts with
/// `deskt-`, so a test may end any process they own without touching anyone else's.
enum TestUsers {
    static func ensure(_ name: String, groups: [String] = []) throws -> UserAccount {
        for group in groups where GroupDirectory.gid(named: group) == nil {
            try run("/usr/sbin/groupadd", [group])
        }
        if UserAccount.named(name) == nil {
            try run("/usr/sbin/useradd", ["--create-home", "--shell", "/bin/sh", name])
        }
        if !groups.isEmpty {
            try run("/usr/sbin/usermod", ["--append", "--groups", groups.joined(separator: ","), name])
        }
        return try #require(UserAccount.named(name))
    }

    /// Live (non-zombie) processes of a test user.
    static func processes(of account: UserAccount) -> [pid_t] {
        ProcFS.allPIDs().filter { ProcFS.uid(of: $0) == account.uid && ProcFS.isAlive($0) }
    }

    /// Ends whatever a test user still runs (only ever called for deskt-* accounts).
    static func reap(_ account: UserAccount) {
        precondition(account.name.hasPrefix("deskt-"))
        for pid in processes(of: account) { kill(pid, SIGKILL) }
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// The outcome of one `deskctl` run.
struct CommandResult {
    let status: Int32
    let stdout: String
    let stderr: String

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder.desk.decode(type, from: Data(stdout.utf8))
    }

    /// Runs a program to its end with stdin from /dev/null, and collects what it printed.
    static func run(_ executable: String, _ arguments: [String]) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// A real deskd process with its own socket and state directory, so it never touches the host's.
final class DaemonUnderTest {
    let root: URL
    let socket: String
    /// The daemon's --runtime-dir (records, session directories) and --state-dir (audit trail).
    let runtimeDirectory: String
    let stateDirectory: String
    let extraArguments: [String]
    let environment: [String: String]
    /// The daemon's configuration file; tests rewrite it and send SIGHUP.
    private(set) var configPath = ""
    private(set) var process: Process?
    let log: URL

    /// `config` is the text of the daemon's deskd.toml; every test daemon gets its own file, so
    /// none reads the host's /etc/deskd/deskd.toml.
    init(config: String = "", extraArguments: [String] = [], environment: [String: String] = [:], reusing other: DaemonUnderTest? = nil) throws {
        self.environment = environment
        if let other {
            root = other.root
        } else {
            root = URL(fileURLWithPath: "/tmp").appendingPathComponent("deskd-test-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        }
        socket = root.appendingPathComponent("deskd.sock").path
        runtimeDirectory = root.appendingPathComponent("run").path
        stateDirectory = root.appendingPathComponent("state").path
        log = root.appendingPathComponent("deskd-\(UUID().uuidString.prefix(4)).log")
        let configPath = root.appendingPathComponent("deskd-\(UUID().uuidString.prefix(4)).toml")
        try config.write(to: configPath, atomically: true, encoding: .utf8)
        self.configPath = configPath.path
        self.extraArguments = ["--config", configPath.path] + extraArguments
        try launch()
    }

    func launch() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestEnvironment.deskd)
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.arguments = [
            "--socket", socket, "--runtime-dir", runtimeDirectory, "--state-dir", stateDirectory,
            "--templates", TestEnvironment.repository.appendingPathComponent("Templates").path,
        ] + extraArguments
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        self.process = process
        // Ready when it answers a ping.
        let client = ControlClient(socketPath: socket)
        for _ in 0..<500 {
            if (try? client.send(Request(command: .ping)))?.ok == true { return }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        throw DaemonFailed(log: logText)
    }

    struct DaemonFailed: Error, CustomStringConvertible {
        let log: String
        var description: String { "deskd did not come up:\n\(log)" }
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    var auditPath: String { stateDirectory + "/audit.log" }
    var auditText: String { (try? String(contentsOfFile: auditPath, encoding: .utf8)) ?? "" }
    var isRunning: Bool { process?.isRunning ?? false }

    /// Kills the daemon the hard way; its sessions must survive this.
    func sigkill() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func deskctl(_ arguments: [String], as user: String? = nil) throws -> CommandResult {
        if let user {
            return try CommandResult.run("/usr/sbin/runuser", ["-u", user, "--", TestEnvironment.deskctl] + arguments + ["--socket", socket])
        }
        return try CommandResult.run(TestEnvironment.deskctl, arguments + ["--socket", socket])
    }

    /// `deskctl start --json` for `user`, which must succeed.
    func start(_ user: String, extra: [String] = [], as caller: String? = nil) throws -> Session {
        // A user starting their own desktop leaves out --user, as a user would.
        let result = try deskctl(["start", "--json"] + (caller == user ? [] : ["--user", user]) + extra, as: caller)
        #expect(result.status == 0, "start failed: \(result.stderr)\n\(logText)")
        return try result.decode(Session.self)
    }

    var client: ControlClient { ControlClient(socketPath: socket) }

    /// The desktop's pid: deskd starts the desktop just after its start reply, so ask `show`.
    func desktopPid(of session: Session) -> pid_t? {
        var pid: pid_t?
        _ = eventually {
            pid = try? deskctl(["show", session.display.description, "--json"]).decode(Session.self).desktopPid
            return pid != nil
        }
        return pid
    }

    /// Runs deskd itself in the foreground for a one-off, such as --check-config.
    static func runDeskd(_ arguments: [String]) throws -> CommandResult {
        try CommandResult.run(TestEnvironment.deskd, arguments)
    }

    /// Kills every session this daemon holds, stops it, and removes its directory.
    func shutDown() {
        if isRunning { _ = try? client.send(Request(command: .kill, all: true)) }
        if let process, process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: root)
    }
}

extension Display {
    /// Nothing holds the display any more: no live lock, no listening socket or port.
    var isFree: Bool { DisplaySnapshot.take(displays: number...number).occupancy(of: self) == .free }
}

/// Polls `condition` for up to `seconds` (for things the kernel finishes asynchronously, like reaping).
func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
