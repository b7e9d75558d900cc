import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc

/// 1d. A Wayland desktop (sway with wayvnc) to ready: the same compositor, VNC server and
/// terminal started by hand, one after the other as a user would type them and as the X
/// baseline does (sway headless with Debian's configuration and the size; wayvnc on a socket
/// once sway's Wayland socket is there; foot once wayvnc answers RFB), to foot's connection to
/// the compositor; against `deskctl start --desktop sway` to its answer, which waits for the
/// same. Then the memory of both kinds of desktop, of the same size.
extension Bench {
    static let waylandPrograms = ["/usr/bin/sway", "/usr/bin/wayvnc", "/usr/bin/foot"]

    /// 6b. A Wayland desktop in the browser (`browserRelays(desktop:)`), where sway is installed.
    func waylandBrowserRelays() throws {
        guard Self.waylandPrograms.allSatisfy({ access($0, X_OK) == 0 }) else {
            report("browser relay of a Wayland desktop: skipped, sway, wayvnc and foot are not all installed here")
            return
        }
        try browserRelays(desktop: "sway")
    }

    func waylandStarts(_ user: UserAccount) throws {
        guard Self.waylandPrograms.allSatisfy({ access($0, X_OK) == 0 }) else {
            report("  sway with wayvnc: skipped, sway, wayvnc and foot are not all installed here")
            return
        }
        var raw: [Double] = [], desk: [Double] = [], ratios: [Double] = []
        for index in 0...options.pairs {
            let rawSeconds = try swayByHand(user)
            let (session, deskSeconds) = try deskctlStart(user, desktop: "sway")
            _ = try deskctlKill(session.display)
            waitUntilIdle(user)
            guard index > 0 else { continue }
            raw.append(rawSeconds)
            desk.append(deskSeconds)
            ratios.append(deskSeconds / rawSeconds)
        }
        row("sway + wayvnc by hand, to a client", Stats(values: raw))
        row("deskctl start sway (Wayland)", Stats(values: desk), String(format: "%.2f× by hand (goal ≤ 1.25×)", Stats(values: ratios).median))

        // Memory: every process of each desktop, once ready and settled, at the default size.
        let xvnc = try deskctlStart(user)
        usleep(1_000_000)
        let xvncMiB = userProcesses(of: [user]).map(residentMiB).reduce(0, +), xvncServer = residentMiB(xvnc.session.pid)
        _ = try deskctlKill(xvnc.session.display)
        waitUntilIdle(user)
        let sway = try deskctlStart(user, desktop: "sway")
        usleep(1_000_000)
        let processes = userProcesses(of: [user])
        let swayMiB = processes.map(residentMiB).reduce(0, +)
        let swayServer = processes.filter { ["sway", "wayvnc"].contains(ProcFS.readText("/proc/\($0)/comm")?.trimming() ?? "") }.map(residentMiB).reduce(0, +)
        _ = try deskctlKill(sway.session.display)
        waitUntilIdle(user)
        let size = Geometry.default.description
        report("  memory at \(size) (RSS, MiB): Xvnc \(String(format: "%.0f", xvncServer)), its whole xterm desktop \(String(format: "%.0f", xvncMiB)); "
               + "sway + wayvnc \(String(format: "%.0f", swayServer)), the whole sway desktop \(String(format: "%.0f", swayMiB)) "
               + String(format: "(%.1f× Xvnc's)", swayMiB / xvncMiB))
    }

    /// sway and wayvnc as a user would start them, in a private directory that is their
    /// XDG_RUNTIME_DIR; seconds to an RFB answer from wayvnc and a second client on sway's
    /// socket (wayvnc is one; the bar, the wallpaper or the terminal is the other). Ended and
    /// waited for before it returns.
    private func swayByHand(_ user: UserAccount) throws -> Double {
        let directory = root.appendingPathComponent("raw-wayland").path
        try? FileManager.default.removeItem(atPath: directory)
        guard mkdir(directory, 0o700) == 0, chown(directory, user.uid, user.gid) == 0 else { throw Options.Usage("cannot make \(directory)") }
        let config = directory + "/sway.config"
        try "include /etc/sway/config\noutput HEADLESS-1 resolution \(Geometry.default)\n".write(toFile: config, atomically: true, encoding: .utf8)
        chown(config, user.uid, user.gid)
        let environment = ["HOME": user.home, "USER": user.name, "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": directory,
                           "WLR_BACKENDS": "headless", "WLR_LIBINPUT_NO_DEVICES": "1", "WLR_RENDERER": "pixman"]
        let start = now()
        let sway = try SessionLauncher.launch(.init(executable: "/usr/bin/sway", arguments: ["-c", config], account: user,
                                                    environment: environment, logFD: devNull, cgroup: nil, umask: 0o077))
        defer {
            kill(sway, SIGTERM)
            waitpid(sway, nil, 0)
            waitUntilIdle(user)
            try? FileManager.default.removeItem(atPath: directory)
        }
        var name: String?
        let deadline = now() + 30
        while name == nil, now() < deadline {
            name = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).first { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }
            if name == nil { usleep(500) }
        }
        guard let name else { throw Options.Usage("sway made no Wayland socket by hand") }
        var vncEnvironment = environment
        vncEnvironment["WAYLAND_DISPLAY"] = name
        let socket = directory + "/rfb.sock"
        let wayvnc = try SessionLauncher.launch(.init(executable: "/usr/bin/wayvnc", arguments: ["-C", "/dev/null", "-u", socket], account: user,
                                                      environment: vncEnvironment, logFD: devNull, cgroup: nil, umask: 0o077))
        defer {
            kill(wayvnc, SIGTERM)
            waitpid(wayvnc, nil, 0)
        }
        var answered = false
        while !answered, now() < deadline {
            if case .answered = RFBHandshake.attempt(.unixSocket(path: socket), xvnc: wayvnc, timeoutMilliseconds: 500) { answered = true } else { usleep(500) }
        }
        guard answered else { throw Options.Usage("wayvnc by hand did not answer in 30 s") }
        // The desktop: a terminal, to its connection (wayvnc's is the other one on the socket;
        // sway's own bar and wallpaper reach it through socket pairs, not by its name).
        let foot = try SessionLauncher.launch(.init(executable: "/usr/bin/foot", arguments: [], account: user, environment: vncEnvironment,
                                                    logFD: devNull, cgroup: nil, umask: 0o022))
        defer {
            kill(foot, SIGTERM)
            waitpid(foot, nil, 0)
        }
        var clients = false
        while !clients, now() < deadline {
            clients = (XClients.clientEnds(of: sway, socket: WaylandVNC.clientSocket(display: Display(0), uid: user.uid, directory: directory))?.count ?? 0) >= 2
            if !clients { usleep(500) }
        }
        guard clients else { throw Options.Usage("foot by hand never reached sway in 30 s") }
        return now() - start
    }

    /// Until none of `user`'s processes is left (the desktop's children end with it).
    func waitUntilIdle(_ user: UserAccount) {
        let deadline = now() + 10
        while !userProcesses(of: [user]).isEmpty, now() < deadline { usleep(10_000) }
        for pid in userProcesses(of: [user]) { kill(pid, SIGKILL) }
    }
}
