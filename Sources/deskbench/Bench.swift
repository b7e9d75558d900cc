import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc

/// Seconds on the monotonic clock.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// One run of a command: how it ended, what it printed, how long it took from spawn to exit.
struct Run {
    let status: Int32
    let stdout: String
    let seconds: Double

    /// `capture: false` for commands that leave a daemon holding their stdout (vncserver does):
    /// then only the exit is waited for.
    static func of(_ executable: String, _ arguments: [String], as user: String? = nil, capture: Bool = true) throws -> Run {
        let process = Process()
        if let user {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", user, "--", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        let out = Pipe()
        process.standardOutput = capture ? out : FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let start = now()
        try process.run()
        let data = capture ? out.fileHandleForReading.readDataToEndOfFile() : Data()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, stdout: String(decoding: data, as: UTF8.self), seconds: now() - start)
    }
}

/// Polls an RFB port until a handshake completes; returns false after `limit` seconds.
func waitForHandshake(port: Int, limit: Double = 30) -> Bool {
    let deadline = now() + limit
    while now() < deadline {
        if case .answered = RFBHandshake.attempt(port: port, timeoutMilliseconds: 500) { return true }
        usleep(1000)
    }
    return false
}

/// Median, 10th and 90th percentile of a sample.
struct Stats {
    let values: [Double]
    var sorted: [Double] { values.sorted() }
    func percentile(_ p: Double) -> Double {
        let s = sorted
        guard !s.isEmpty else { return .nan }
        let rank = p * Double(s.count - 1)
        let low = Int(rank.rounded(.down)), high = Int(rank.rounded(.up))
        return s[low] + (s[high] - s[low]) * (rank - Double(low))
    }
    var median: Double { percentile(0.5) }
    var spread: String { "\(format(percentile(0.1)))–\(format(percentile(0.9)))" }
}

func format(_ seconds: Double) -> String {
    if seconds.isNaN { return "n/a" }
    if seconds >= 10 { return String(format: "%.1f s", seconds) }
    if seconds >= 1 { return String(format: "%.2f s", seconds) }
    return String(format: "%.1f ms", seconds * 1000)
}

/// Used from concurrent starts only through what never changes after init (paths, users).
final class Bench: @unchecked Sendable {
    let options: Options
    let root: URL
    let socket: String
    let users: [UserAccount]
    /// vncserver runs as a user of its own: its kill leaves processes behind, which are counted, then ended.
    let vncUser: UserAccount
    var vncserverLeftovers: [Int] = []
    var daemon: Process?
    var lines: [String] = []
    /// Raw Xvnc servers the baseline started, by display, to be ended on the way out.
    var rawServers: [Int: Process] = [:]
    let deskdDisplays = 10...49
    let rawDisplays = 50...89
    let vncserverDisplay = 95

    init(options: Options) throws {
        self.options = options
        root = URL(fileURLWithPath: "/tmp/deskbench-\(getpid())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        socket = root.appendingPathComponent("deskd.sock").path
        users = try (1...options.users).map { index in try Self.ensureUser("deskb-\(index)") }
        vncUser = try Self.ensureUser("deskb-vnc")
    }

    var deskctl: String { options.products + "/deskctl" }
    var deskdPath: String { options.products + "/deskd" }

    static func ensureUser(_ name: String) throws -> UserAccount {
        if let account = UserAccount.named(name) { return account }
        _ = try Run.of("/usr/sbin/useradd", ["--create-home", "--shell", "/bin/sh", name])
        guard let account = UserAccount.named(name) else { throw Options.Usage("could not create user \(name)") }
        return account
    }

    // MARK: The daemon under test

    func startDaemon() throws {
        let config = root.appendingPathComponent("deskd.toml")
        try """
            [limits]
            max_sessions_per_user = 10
            displays = "\(deskdDisplays.lowerBound)-\(deskdDisplays.upperBound)"
            starts_per_minute = 0
            [daemon]
            log_level = "notice"
            """.write(to: config, atomically: true, encoding: .utf8)
        let templates = URL(fileURLWithPath: options.products).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Templates").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: deskdPath)
        process.arguments = ["--config", config.path, "--socket", socket, "--runtime-dir", root.appendingPathComponent("run").path,
                             "--state-dir", root.appendingPathComponent("state").path, "--templates", templates]
        process.standardError = try FileHandle(forWritingTo: { let log = root.appendingPathComponent("deskd.log"); FileManager.default.createFile(atPath: log.path, contents: nil); return log }())
        try process.run()
        daemon = process
        for _ in 0..<500 {
            if (try? ControlClient(socketPath: socket).send(Request(command: .ping)))?.ok == true { return }
            usleep(10_000)
        }
        throw Options.Usage("deskd did not come up; see \(root.path)/deskd.log")
    }

    var daemonPID: pid_t { daemon?.processIdentifier ?? 0 }

    func deskctlStart(_ user: UserAccount) throws -> (session: Session, seconds: Double) {
        let start = now()
        let run = try Run.of(deskctl, ["start", "--user", user.name, "--json", "--socket", socket])
        guard run.status == 0, let session = try? JSONDecoder.desk.decode(Session.self, from: Data(run.stdout.utf8)) else {
            throw Options.Usage("deskctl start failed for \(user.name): \(run.stdout)")
        }
        guard waitForHandshake(port: session.rfbPort) else { throw Options.Usage("no handshake on \(session.display)") }
        return (session, now() - start)
    }

    func deskctlKill(_ display: Display) throws -> Double {
        try Run.of(deskctl, ["kill", display.description, "--socket", socket]).seconds
    }

    // MARK: The baselines

    /// A password file for `user`, as vncpasswd would write it, in a directory only they can read.
    func passwordFile(for user: UserAccount) throws -> String {
        let directory = root.appendingPathComponent("raw-\(user.name)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chown(directory.path, user.uid, user.gid)
        chmod(directory.path, 0o700)
        let file = directory.appendingPathComponent("passwd")
        FileManager.default.createFile(atPath: file.path, contents: Data(VNCPasswordFile.encode(password: SessionPassword.generate())))
        chown(file.path, user.uid, user.gid)
        chmod(file.path, 0o600)
        return file.path
    }

    /// Xtigervnc launched by hand as `user`, with the options deskd gives it.
    func launchRaw(_ display: Int, as user: UserAccount, passwordFile: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid", String(user.uid), "--regid", String(user.gid), "--init-groups", "--",
                             "/usr/bin/Xtigervnc", ":\(display)", "-rfbport", String(5900 + display), "-localhost", "-nolisten", "tcp",
                             "-SecurityTypes", "VncAuth", "-rfbauth", passwordFile, "-geometry", "1920x1080", "-depth", "24", "-AlwaysShared"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        rawServers[display] = process
        return process
    }

    func stopRaw(_ display: Int) {
        guard let process = rawServers.removeValue(forKey: display) else { return }
        // Foundation's children start with SIGTERM blocked.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        usleep(2000)
        XLockFile.reclaim(Display(display))
    }

    /// Debian's vncserver wrapper as `user`: from the command to a handshake.
    func vncserverStart(_ user: UserAccount) throws -> Double {
        let vnc = user.home + "/.vnc"
        try? FileManager.default.createDirectory(atPath: vnc, withIntermediateDirectories: true)
        chown(vnc, user.uid, user.gid)
        let passwd = vnc + "/passwd"
        FileManager.default.createFile(atPath: passwd, contents: Data(VNCPasswordFile.encode(password: SessionPassword.generate())))
        chown(passwd, user.uid, user.gid)
        chmod(passwd, 0o600)
        let start = now()
        let run = try Run.of("/usr/bin/vncserver", [":\(vncserverDisplay)", "-localhost", "yes", "-SecurityTypes", "VncAuth",
                                                   "-geometry", "1920x1080"], as: user.name, capture: false)
        guard run.status == 0, waitForHandshake(port: 5900 + vncserverDisplay) else { throw Options.Usage("vncserver failed for \(user.name)") }
        return now() - start
    }

    /// `vncserver -kill`, then whatever of the session it left running (counted) is ended.
    func vncserverKill(_ user: UserAccount) {
        _ = try? Run.of("/usr/bin/vncserver", ["-kill", ":\(vncserverDisplay)"], as: user.name, capture: false)
        usleep(200_000)
        let left = ProcFS.allPIDs().filter { ProcFS.uid(of: $0) == user.uid && ProcFS.isAlive($0) }
        vncserverLeftovers.append(left.count)
        precondition(user.name.hasPrefix("deskb-"))
        for pid in left { kill(pid, SIGKILL) }
        XLockFile.reclaim(Display(vncserverDisplay))
    }

    // MARK: Measures

    func cpuSeconds(_ pid: pid_t) -> Double {
        guard let text = ProcFS.readText("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return .nan }
        let fields = text[text.index(close, offsetBy: 2)...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticks
    }

    func residentMiB(_ pid: pid_t) -> Double {
        let status = ProcFS.readText("/proc/\(pid)/status") ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? .nan) / 1024
    }

    /// Live processes of the bench users.
    func userProcesses() -> [pid_t] {
        let uids = Set(users.map(\.uid))
        return ProcFS.allPIDs().filter { pid in ProcFS.uid(of: pid).map(uids.contains) == true && ProcFS.isAlive(pid) }
    }

    func report(_ line: String) {
        print(line)
        fflush(nil)
        lines.append(line)
    }

    func row(_ label: String, _ stats: Stats, _ ratio: String = "") {
        report("  " + label.padding(toLength: 38, withPad: " ", startingAt: 0)
               + format(stats.median).leftPadded(10) + "   " + stats.spread.padding(toLength: 22, withPad: " ", startingAt: 0) + ratio)
    }

    func cleanUp() {
        if let daemon, daemon.isRunning {
            _ = try? ControlClient(socketPath: socket).send(Request(command: .kill, all: true))
            daemon.terminate()
            daemon.waitUntilExit()
        }
        for display in Array(rawServers.keys) { stopRaw(display) }
        if XLockFile.read(Display(vncserverDisplay)) != .absent { vncserverKill(vncUser) }
        try? FileManager.default.removeItem(at: root)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
