import DeskCore
import Foundation
import Testing

/// The Wayland display server's description (issue 43, part 3): what deskd-session runs, and
/// what the desktop's programs are told. The end-to-end test (WaylandDesktopTests) runs it.
@Suite struct WaylandVNCTests {
    static let needs = DisplayServerNeeds(display: Display(4), directory: "/run/deskd/by-id/s1", xauthority: "/run/deskd/by-id/s1/Xauthority",
                                          passwordFile: "/run/deskd/by-id/s1/passwd", rfbSocket: "/run/deskd/by-id/s1/rfb.sock",
                                          geometry: Geometry(width: 1280, height: 800), depth: 24, title: "alice's desktop (:4)")

    /// A launcher shell that becomes wayvnc on the session's socket (so the pid deskd watches is
    /// the socket's), with the compositor, the size, the socket and the private directory as
    /// arguments, never spliced into the script; wayvnc reads no configuration of the user's,
    /// and keeps its own runtime files in the private directory.
    @Test func theLauncherBecomesWayvncOnTheSessionsSocket() throws {
        let line = WaylandVNC(compositor: .sway).commandLine(Self.needs)
        #expect(line.count == 9 && line[0] == "/bin/sh" && line[1] == "-c")
        #expect(Array(line[3...]) == ["deskd-wayland", "/usr/bin/sway", "1280x800", "/usr/bin/wayvnc", "/run/deskd/by-id/s1/rfb.sock", "/run/deskd/by-id/s1"])
        let script = line[2]
        #expect(script.contains("XDG_RUNTIME_DIR=$5 exec \"$3\" -C /dev/null -u \"$4\""))
        #expect(script.contains("WLR_BACKENDS=headless"))
        #expect(!script.contains("/run/deskd"), "the script holds a path of the session's: it must come as an argument")
        // labwc gets the hook with -s, and its output's size from wlr-randr in the hook.
        let labwc = WaylandVNC(compositor: .labwc).commandLine(Self.needs)
        #expect(labwc[4] == "/usr/bin/labwc" && labwc[2].contains("exec \"$1\" -s \"/bin/sh $hook\""))
        #expect(labwc[2].contains("wlr-randr --output HEADLESS-1 --custom-mode %s"))
    }

    /// The launcher runs as a shell script: given a stand-in compositor that runs the startup
    /// hook the way sway does (exec from its configuration) in the login's runtime directory, it
    /// execs the VNC server on the display the hook recorded, by its absolute path; the hook's
    /// record and sway's configuration are in the private directory, not the login's.
    /// One case at a time: a bus the launcher starts inherits whatever descriptors it was given,
    /// the other case's Process's among them.
    @Test(.serialized, arguments: [true, false])
    func theLauncherWaitsForTheCompositorsHookThenExecsTheServer(loginHasABus: Bool) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-wayland-\(UUID())").path
        let directory = scratch + "/private", runtime = scratch + "/run-user"
        for path in [directory, runtime] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // The stand-in reads the `exec` line sway would run, runs it as sway, then waits.
        let compositor = scratch + "/compositor", server = scratch + "/server"
        try """
            #!/bin/sh
            hook=$(sed -n 's/^exec \\/bin\\/sh "\\(.*\\)"$/\\1/p' "$2")
            WAYLAND_DISPLAY=wayland-1 DISPLAY=:9 SWAYSOCK="$XDG_RUNTIME_DIR/ipc.sock" /bin/sh "$hook"
            exec sleep 1
            """.write(toFile: compositor, atomically: true, encoding: .utf8)
        try "#!/bin/sh\necho \"$WAYLAND_DISPLAY $XDG_RUNTIME_DIR $*\"\n".write(toFile: server, atomically: true, encoding: .utf8)
        chmod(compositor, 0o755); chmod(server, 0o755)
        var needs = Self.needs
        needs.directory = directory
        var line = WaylandVNC(compositor: .sway, wayvnc: server).commandLine(needs)
        line[4] = compositor
        let process = Process(), output = Pipe()
        process.executableURL = URL(fileURLWithPath: line[0])
        process.arguments = Array(line.dropFirst())
        process.environment = ["XDG_RUNTIME_DIR": runtime, "HOME": scratch, "PATH": "/usr/bin:/bin"]
            .merging(loginHasABus ? ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime)/bus"] : [:]) { $1 }
        process.standardOutput = output
        try process.run()
        if !loginHasABus {
            // The desktop's own bus lives as long as the session, and holds what Foundation gave
            // the launcher (the socket it watches the child's end by): ended here, once the hook
            // has run, as the session's end would end it.
            let recorded = directory + "/" + WaylandVNC.environmentFile
            for _ in 0..<1000 where access(recorded, F_OK) != 0 { usleep(10_000) }
            usleep(200_000)
            Self.endProcesses(naming: "unix:path=\(directory)/bus")
        }
        process.waitUntilExit()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(said == "\(runtime)/wayland-1 \(directory) -C /dev/null -u /run/deskd/by-id/s1/rfb.sock\n")
        let recorded = try String(contentsOfFile: directory + "/" + WaylandVNC.environmentFile, encoding: .utf8)
        if loginHasABus {
            #expect(recorded == "WAYLAND_DISPLAY=\(runtime)/wayland-1\nDISPLAY=:9\nSWAYSOCK=\(runtime)/ipc.sock\nDBUS_SESSION_BUS_ADDRESS=unix:path=\(runtime)/bus\n")
        } else if access("/usr/bin/dbus-daemon", X_OK) == 0 {
            // No bus of the login's: the desktop's own, in the private directory.
            #expect(recorded.contains("\nDBUS_SESSION_BUS_ADDRESS=unix:path=\(directory)/bus\n"), "\(recorded)")
        }
        #expect(WaylandVNC.xDisplay(recordedIn: recorded) == Display(9))
        #expect(try String(contentsOfFile: directory + "/sway.config", encoding: .utf8).contains("output HEADLESS-1 resolution 1280x800"))
        // Debian's configuration, less a wallpaper that is not installed (sway-backgrounds).
        if let system = try? String(contentsOfFile: "/etc/sway/config", encoding: .utf8) {
            let copy = try String(contentsOfFile: directory + "/sway.system.config", encoding: .utf8)
            for line in system.split(separator: "\n") where line.hasPrefix("output ") && line.contains(" bg /") {
                let file = String(line.split(separator: " ")[3])
                #expect(copy.contains("\n" + line + "\n") == (access(file, R_OK) == 0), "\(line)")
            }
            // Every other line as it is.
            #expect(copy.split(separator: "\n", omittingEmptySubsequences: false).count == system.split(separator: "\n", omittingEmptySubsequences: false).count)
        }
    }

    /// Ends this test's own processes whose command line holds `text` (what the launcher left
    /// to the session's end).
    static func endProcesses(naming text: String) {
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            // Read, not stat-sized: /proc's files say they are empty.
            guard let pid = Int32(entry), let handle = FileHandle(forReadingAtPath: "/proc/\(entry)/cmdline") else { continue }
            let line = handle.readDataToEndOfFile()
            try? handle.close()
            // SIGKILL: Foundation's Process passes on the test runner's blocked SIGTERM.
            if String(decoding: line, as: UTF8.self).contains(text) { kill(pid, SIGKILL) }
        }
    }

    @Test func theDesktopIsToldTheSessionsDirectoryAndTheCompositorsSockets() {
        let server = WaylandVNC(compositor: .sway)
        #expect(server.sessionType == "wayland")
        #expect(server.clientEnvironment(Self.needs) == ["XDG_RUNTIME_DIR": "/run/deskd/by-id/s1"])
        #expect(WaylandVNC.clientSocket(display: Display(4), uid: 1001, directory: Self.needs.directory)
                == .inOwnersDirectories(prefixes: ["/run/user/1001/wayland-", "/run/deskd/by-id/s1/wayland-"]))
        #expect(server.desktopCommand(xstartup: "/x/xstartup").suffix(2) == ["deskd-desktop", "/x/xstartup"])
        #expect(WaylandVNC.xDisplay(recordedIn: "WAYLAND_DISPLAY=wayland-1\nDISPLAY=\n") == nil)
        #expect(WaylandVNC.xDisplay(recordedIn: "DISPLAY=:99999999999\n") == nil)
    }
}
