import DeskClient
import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc

/// Seconds on the monotonic clock.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Polls an RFB endpoint until a handshake completes; returns false after `limit` seconds.
func waitForHandshake(_ endpoint: RFBEndpoint?, limit: Double = 30) -> Bool {
    guard let endpoint else { return false }
    let deadline = now() + limit
    while now() < deadline {
        if case .answered = RFBHandshake.attempt(endpoint, timeoutMilliseconds: 500) { return true }
        usleep(1000)
    }
    return false
}

func waitForHandshake(port: Int, limit: Double = 30) -> Bool {
    waitForHandshake(.tcp(port: port), limit: limit)
}

func format(_ seconds: Double) -> String {
    if seconds.isNaN { return "n/a" }
    if seconds >= 10 { return String(format: "%.1f s", seconds) }
    if seconds >= 1 { return String(format: "%.2f s", seconds) }
    if seconds >= 0.001 { return String(format: "%.1f ms", seconds * 1000) }
    return String(format: "%.2f ms", seconds * 1000)
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
    /// Desktops run by hand on raw servers, by display: ended with their server.
    var rawDesktops: [Int: pid_t] = [:]
    var freshResidentMiB = 0.0
    var daemon: Process?
    var lines: [String] = []
    /// Raw Xvnc servers the baseline started, by display, to be ended on the way out.
    var rawServers: [Int: pid_t] = [:]
    let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
    let deskdDisplays = 10...49
    let rawDisplays = 50...89
    let vncserverDisplay = 95
    /// deskd's browser gateway, on loopback.
    let webPort: Int

    init(options: Options) throws {
        self.options = options
        root = URL(fileURLWithPath: "/tmp/deskbench-\(getpid())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        socket = options.clusterSocket ?? root.appendingPathComponent("deskd.sock").path
        users = try (1...options.users).map { index in try Self.ensureUser("deskb-\(index)") }
        vncUser = try Self.ensureUser("deskb-vnc")
        webPort = options.clusterSocket != nil ? options.clusterWebPort : try Self.freeLoopbackPort()
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
        (daemon, _) = try launchDaemon(named: "deskd", socket: socket, config: """
            [limits]
            max_sessions_per_user = 10
            displays = "\(deskdDisplays.lowerBound)-\(deskdDisplays.upperBound)"
            starts_per_minute = 0
            [daemon]
            log_level = "notice"
            [sessions]
            default_desktop = "bench"
            [web]
            listen = "127.0.0.1:\(webPort)"
            # The portal's crowd (200 browsers, each with its live updates) all come from this
            # one account on loopback: one client, whose share is raised for the measure.
            max_connections = 1024
            max_connections_per_address = 1024
            """)
    }

    /// A deskd of the bench's own, its state under root/`name`, with `config`; returns once it answers.
    func launchDaemon(named name: String, socket: String, config text: String) throws -> (Process, String) {
        let directory = root.appendingPathComponent(name == "deskd" ? "" : name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("deskd.toml")
        try text.write(to: config, atomically: true, encoding: .utf8)
        // The sessions' desktop opens its display and waits: `start` answers once a process of
        // the session holds its display, and forty xterms drawing would load the two cores the
        // measures share. xprop -spy is the smallest such client on the host (x11-utils).
        // "wrapper" is the shape most people's xstartups have: a shell that stays, whose child
        // opens the display. "xfce" is Debian's Xfce started the same way, where it is installed.
        // "sway" is the shipped Wayland desktop's template, as the by-hand baseline runs it.
        let templates = root.appendingPathComponent("templates")
        try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
        for (name, script) in [("bench", Self.benchDesktop), ("wrapper", Self.wrapperDesktop), ("xfce", Self.xfceDesktop), ("sway", Self.swayDesktop), ("xterm", Self.xtermDesktop)] {
            try script.write(to: templates.appendingPathComponent("\(name).xstartup"), atomically: true, encoding: .utf8)
        }
        // The portal's page (its HTML, script and style) from the source tree the products were
        // built in, as the package installs it beside the templates.
        let portal = URL(fileURLWithPath: options.products).appendingPathComponent("../../Templates/portal").standardized
        let benchPortal = templates.appendingPathComponent("portal")
        if FileManager.default.fileExists(atPath: portal.path) {
            try? FileManager.default.removeItem(at: benchPortal)
            try FileManager.default.copyItem(at: portal, to: benchPortal)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: deskdPath)
        process.arguments = ["--config", config.path, "--socket", socket, "--runtime-dir", directory.appendingPathComponent("run").path,
                             "--state-dir", directory.appendingPathComponent("state").path, "--templates", templates.path]
        let log = directory.appendingPathComponent("deskd.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 {
            if (try? ControlClient(socketPath: socket).send(Request(command: .ping)))?.ok == true { return (process, socket) }
            usleep(10_000)
        }
        process.terminate()
        throw Options.Usage("deskd did not come up; see \(log.path)")
    }

    var daemonPID: pid_t { daemon?.processIdentifier ?? 0 }

    static let benchDesktop = "#!/bin/sh\n# deskbench: a desktop that opens its display and waits.\nexec xprop -root -spy >/dev/null\n"
    static let wrapperDesktop = "#!/bin/sh\n# deskbench: a shell whose child opens the display, as most xstartups are.\nxprop -root -spy >/dev/null\n"
    static let swayDesktop = "#!/bin/sh\n# deskbench: Templates/sway.xstartup's desktop, a terminal on sway.\n# compositor: sway\nfoot &\nexec swaymsg -t subscribe '[\"shutdown\"]'\n"
    /// What a person feels (scripts/bench-feel): an xterm in the corner, as the by-hand path starts one.
    static let xtermDesktop = "#!/bin/sh\n# deskbench: an xterm in the corner, as bench-feel's by-hand path starts one.\nexec xterm -geometry 80x24+0+0\n"
    static let xfceDesktop = "#!/bin/sh\n# deskbench: Xfce as a user's ~/.vnc/xstartup starts it (no exec).\nunset SESSION_MANAGER DBUS_SESSION_BUS_ADDRESS\ndbus-launch --exit-with-session startxfce4\n"

    func deskctlStart(_ user: UserAccount, desktop: String? = nil) throws -> (session: Session, seconds: Double) {
        let start = now()
        let run = try Run.of(deskctl, ["start", "--user", user.name, "--json", "--socket", socket] + (desktop.map { ["--desktop", $0] } ?? []))
        guard run.status == 0, let session = try? JSONDecoder.desk.decode(Session.self, from: Data(run.stdout.utf8)) else {
            throw Options.Usage("deskctl start failed for \(user.name): \(run.stdout)")
        }
        guard waitForHandshake(session.endpoint) else { throw Options.Usage("no handshake on \(session.display)") }
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
        _ = FileManager.default.createFile(atPath: file.path, contents: Data(VNCPasswordFile.encode(password: SessionPassword.generate())))
        chown(file.path, user.uid, user.gid)
        chmod(file.path, 0o600)
        return file.path
    }

    /// Xtigervnc launched by hand as `user` through setpriv, with the options deskd gives it: a
    /// fresh X cookie in an authority file of the user's, and RFB on a Unix socket in a 0700
    /// directory of the user's (no TCP port), bound under umask 077. Writing the cookie is part
    /// of the floor, as deskd's writing it is part of its start.
    func launchRaw(_ display: Int, as user: UserAccount, passwordFile: String, geometry: Geometry = .default) throws -> pid_t {
        let directory = root.appendingPathComponent("raw-d\(display)").path
        if mkdir(directory, 0o700) == 0 { chown(directory, user.uid, user.gid) }
        let authority = directory + "/Xauthority"
        unlink(authority)
        let fd = open(authority, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        let cookie = XAuthority.generate().fileContents(for: Display(display))
        guard fd >= 0, fchown(fd, user.uid, user.gid) == 0, cookie.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == cookie.count else {
            if fd >= 0 { close(fd) }
            throw Options.Usage("cannot write \(authority)")
        }
        close(fd)
        // The very command line deskd starts a desktop's Xvnc with (DeskCore's Xvnc), typed by hand.
        let command = Xvnc(executable: "/usr/bin/Xtigervnc").commandLine(DisplayServerNeeds(
            display: Display(display), xauthority: authority, passwordFile: passwordFile, rfbSocket: directory + "/rfb.sock",
            geometry: geometry, depth: 24, title: "raw Xtigervnc (:\(display))"))
        let pid = try SessionLauncher.launch(.init(
            executable: command[0],
            arguments: Array(command.dropFirst()),
            account: user, environment: ["HOME": user.home, "USER": user.name, "PATH": "/usr/bin:/bin"], logFD: devNull, cgroup: nil,
            umask: 0o077
        ))
        rawServers[display] = pid
        return pid
    }

    /// Polls a raw server over its socket, with the check deskd makes (the listener is that Xvnc).
    func waitForRaw(_ display: Int, limit: Double = 30) -> Bool {
        guard let pid = rawServers[display] else { return false }
        let socket = root.appendingPathComponent("raw-d\(display)/rfb.sock").path
        let deadline = now() + limit
        while now() < deadline {
            if case .answered = RFBHandshake.attempt(.unixSocket(path: socket), xvnc: pid, timeoutMilliseconds: 500) { return true }
            usleep(500)
        }
        return false
    }

    /// Runs `script` by hand on raw server `display`, as its user would after starting Xvnc,
    /// and returns once Xvnc has accepted an X connection.
    func runOnRaw(_ display: Int, as user: UserAccount, script: String) throws -> pid_t {
        guard let xvnc = rawServers[display] else { throw Options.Usage("no raw server on :\(display)") }
        let directory = root.appendingPathComponent("raw-d\(display)").path
        let path = directory + "/xstartup"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chown(path, user.uid, user.gid)
        let shell = try SessionLauncher.launch(.init(
            executable: "/bin/sh", arguments: [path], account: user,
            environment: ["HOME": user.home, "USER": user.name, "PATH": "/usr/bin:/bin", "DISPLAY": ":\(display)",
                          "XAUTHORITY": directory + "/Xauthority"],
            logFD: devNull, cgroup: nil, umask: 0o022
        ))
        rawDesktops[display] = shell
        // Nothing else connects to a raw server of the bench's: any connection Xvnc accepted on
        // its X socket is the script's (deskd also asks which process holds it).
        let deadline = now() + 30
        while now() < deadline {
            if XClients.clientEnds(of: xvnc, display: Display(display))?.isEmpty == false { return shell }
            usleep(500)
        }
        throw Options.Usage("the desktop run by hand on :\(display) never opened it")
    }

    func stopRaw(_ display: Int) {
        if let shell = rawDesktops.removeValue(forKey: display) {
            kill(-shell, SIGTERM)
            waitpid(shell, nil, 0)
        }
        guard let pid = rawServers.removeValue(forKey: display) else { return }
        kill(pid, SIGTERM)
        waitpid(pid, nil, 0)
        XLockFile.reclaim(Display(display))
    }

    /// Debian's vncserver wrapper as `user`: from the command to a handshake.
    func vncserverStart(_ user: UserAccount) throws -> Double {
        let vnc = user.home + "/.vnc"
        try? FileManager.default.createDirectory(atPath: vnc, withIntermediateDirectories: true)
        chown(vnc, user.uid, user.gid)
        let passwd = vnc + "/passwd"
        _ = FileManager.default.createFile(atPath: passwd, contents: Data(VNCPasswordFile.encode(password: SessionPassword.generate())))
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
    func userProcesses(of accounts: [UserAccount]? = nil) -> [pid_t] {
        let uids = Set((accounts ?? users).map(\.uid))
        return ProcFS.allPIDs().filter { pid in ProcFS.uid(of: pid).map(uids.contains) == true && ProcFS.isAlive(pid) }
    }

    func report(_ line: String) {
        print(line)
        fflush(nil)
        lines.append(line)
    }

    /// One measure's line: the median and the 10th to 90th percentile in `unit` (seconds unless
    /// told), then the ratio.
    func row(_ label: String, _ stats: Stats, _ ratio: String = "", unit: (Double) -> String = format) {
        report("  " + label.padding(toLength: 38, withPad: " ", startingAt: 0)
               + unit(stats.median).leftPadded(10) + "   " + stats.spread(in: unit).padding(toLength: 22, withPad: " ", startingAt: 0) + ratio)
    }

    func cleanUp() {
        if let daemon, daemon.isRunning {
            _ = try? ControlClient(socketPath: socket).send(Request(command: .kill, all: true))
            daemon.terminate()
            daemon.waitUntilExit()
        }
        for display in Array(rawServers.keys) { stopRaw(display) }
        if XLockFile.read(Display(vncserverDisplay)) != .absent { vncserverKill(vncUser) }
        // Whatever a failed run left of the throwaway users' processes.
        let uids = Set((users + [vncUser]).map(\.uid))
        for pid in ProcFS.allPIDs() where ProcFS.uid(of: pid).map(uids.contains) == true { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: root)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
