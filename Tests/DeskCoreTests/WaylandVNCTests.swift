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
    /// the socket's), with the compositor, the size and the socket as arguments, never spliced
    /// into the script; and wayvnc reads no configuration of the user's.
    @Test func theLauncherBecomesWayvncOnTheSessionsSocket() throws {
        let line = WaylandVNC(compositor: .sway).commandLine(Self.needs)
        #expect(line.count == 8 && line[0] == "/bin/sh" && line[1] == "-c")
        #expect(Array(line[3...]) == ["deskd-wayland", "/usr/bin/sway", "1280x800", "/usr/bin/wayvnc", "/run/deskd/by-id/s1/rfb.sock"])
        let script = line[2]
        #expect(script.contains("exec \"$3\" -C /dev/null -u \"$4\""))
        #expect(script.contains("WLR_BACKENDS=headless"))
        #expect(!script.contains("/run/deskd"), "the script holds a path of the session's: it must come as an argument")
        // labwc gets the hook with -s, and its output's size from wlr-randr in the hook.
        let labwc = WaylandVNC(compositor: .labwc).commandLine(Self.needs)
        #expect(labwc[4] == "/usr/bin/labwc" && labwc[2].contains("exec \"$1\" -s \"/bin/sh $hook\""))
        #expect(labwc[2].contains("wlr-randr --output HEADLESS-1 --custom-mode %s"))
    }

    /// The launcher runs as a shell script: given a stand-in compositor that makes its Wayland
    /// socket and runs the startup hook the way sway does (exec from its configuration), it execs
    /// the VNC server with the socket's name, and the hook records the displays.
    @Test func theLauncherWaitsForTheCompositorsHookThenExecsTheServer() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-wayland-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The stand-in reads the `exec` line sway would run, runs it as sway, then waits.
        let compositor = directory + "/compositor", server = directory + "/server"
        try """
            #!/bin/sh
            hook=$(sed -n 's/^exec \\/bin\\/sh "\\(.*\\)"$/\\1/p' "$2")
            WAYLAND_DISPLAY=wayland-1 DISPLAY=:9 SWAYSOCK="$XDG_RUNTIME_DIR/ipc.sock" /bin/sh "$hook"
            exec python3 -c 'import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(1)' "$XDG_RUNTIME_DIR/wayland-1"
            """.write(toFile: compositor, atomically: true, encoding: .utf8)
        try "#!/bin/sh\necho \"$WAYLAND_DISPLAY $*\"\n".write(toFile: server, atomically: true, encoding: .utf8)
        chmod(compositor, 0o755); chmod(server, 0o755)
        var line = WaylandVNC(compositor: .sway, wayvnc: server).commandLine(Self.needs)
        line[4] = compositor
        let process = Process(), output = Pipe()
        process.executableURL = URL(fileURLWithPath: line[0])
        process.arguments = Array(line.dropFirst())
        process.environment = ["XDG_RUNTIME_DIR": directory, "HOME": directory, "PATH": "/usr/bin:/bin"]
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(said == "wayland-1 -C /dev/null -u /run/deskd/by-id/s1/rfb.sock\n")
        let recorded = try String(contentsOfFile: directory + "/" + WaylandVNC.environmentFile, encoding: .utf8)
        #expect(recorded == "WAYLAND_DISPLAY=wayland-1\nDISPLAY=:9\nSWAYSOCK=\(directory)/ipc.sock\n")
        #expect(WaylandVNC.xDisplay(recordedIn: recorded) == Display(9))
        #expect(try String(contentsOfFile: directory + "/sway.config", encoding: .utf8).contains("output HEADLESS-1 resolution 1280x800"))
    }

    @Test func theDesktopIsToldTheSessionsDirectoryAndTheCompositorsSockets() {
        let server = WaylandVNC(compositor: .sway)
        #expect(server.sessionType == "wayland")
        #expect(server.clientEnvironment(Self.needs) == ["XDG_RUNTIME_DIR": "/run/deskd/by-id/s1"])
        #expect(WaylandVNC.clientSocket(in: Self.needs.directory) == .inPrivateDirectory(prefix: "/run/deskd/by-id/s1/wayland-"))
        #expect(server.desktopCommand(xstartup: "/x/xstartup").suffix(2) == ["deskd-desktop", "/x/xstartup"])
        #expect(WaylandVNC.xDisplay(recordedIn: "WAYLAND_DISPLAY=wayland-1\nDISPLAY=\n") == nil)
        #expect(WaylandVNC.xDisplay(recordedIn: "DISPLAY=:99999999999\n") == nil)
    }
}
