import DeskCore
import Foundation
import Testing

@Suite struct XstartupTemplateTests {
    @Test func substitutesTokensAsQuotedShellWords() throws {
        let template = XstartupTemplate(name: "t", text: "exec xterm -title {{user}}@{{ display }} -e cd {{home}}\n")
        let text = try template.render(["user": "alice", "display": ":3", "home": "/home/o'brien x"])
        #expect(text == "exec xterm -title 'alice'@':3' -e cd '/home/o'\\''brien x'\n")
    }

    @Test func refusesUnknownAndUnclosedTokens() {
        #expect(throws: DeskError.self) { try XstartupTemplate(name: "t", text: "{{nope}}").render(["user": "a"]) }
        #expect(throws: DeskError.self) { try XstartupTemplate(name: "t", text: "{{user").render(["user": "a"]) }
    }

    @Test(arguments: ["xterm", "gnome", "my-desktop_2"])
    func acceptsDesktopNames(name: String) throws {
        #expect(try XstartupTemplate.validate(desktopName: name) == name)
    }

    @Test(arguments: ["", "../etc/passwd", "Gnome", "a b", "-x", "x/y", String(repeating: "a", count: 33)])
    func refusesDesktopNamesThatAreNotPlainWords(name: String) {
        let error = #expect(throws: DeskError.self) { try XstartupTemplate.validate(desktopName: name) }
        #expect(error?.code == .invalidDesktop)
    }

    /// Every shipped template renders and is valid sh (`sh -n`).
    @Test(arguments: shippedTemplates())
    func shippedTemplateRendersAndParses(path: String) throws {
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let text = try XstartupTemplate(name: name, text: String(contentsOfFile: path, encoding: .utf8)).render([
            "user": "alice", "home": "/home/alice", "display": ":3", "geometry": "1920x1080",
            "desktop": name, "session_dir": "/run/deskd/displays/3",
        ])
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("xstartup-\(name)-\(UUID().uuidString)")
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/bin/sh")
        check.arguments = ["-n", file.path]
        try check.run()
        check.waitUntilExit()
        #expect(check.terminationStatus == 0, "sh -n rejected \(name)")
    }

    static func shippedTemplates() -> [String] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Templates")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".xstartup") }.sorted().map { directory.appendingPathComponent($0).path }
    }
}

@Suite struct UserXstartupTests {
    @Test func theUsersXstartupIsTriedRightAfterTheShebang() throws {
        let script = XstartupTemplate.sessionScript("#!/bin/sh\nexec xterm\n", preferringUserXstartup: true)
        let lines = script.split(separator: "\n")
        #expect(lines.first == "#!/bin/sh" && lines[1] == #"cd "$HOME" 2>/dev/null || cd /"# && lines.last == "exec xterm")
        #expect(script.contains(#"exec "$HOME/.vnc/xstartup""#))
        #expect(script.contains(#"tigervnc="${XDG_CONFIG_HOME:-$HOME/.config}/tigervnc/xstartup""#))
        #expect(!XstartupTemplate.sessionScript("#!/bin/sh\nexec xterm\n", preferringUserXstartup: false).contains(".vnc"))
    }

    /// The script as /bin/sh runs it, in a home with the user's files: ~/.vnc/xstartup first,
    /// then TigerVNC 1.14's ~/.config/tigervnc/xstartup, then the template.
    @Test func theUsersXstartupIsFoundWhereTigerVNCKeepsIt() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-home-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        func place(_ path: String, _ word: String, executable: Bool = true) throws {
            let file = home + "/" + path
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try "#!/bin/sh\necho \(word)\n".write(toFile: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: executable ? 0o755 : 0o644], ofItemAtPath: file)
        }
        func run() throws -> String {
            let script = XstartupTemplate.sessionScript("#!/bin/sh\necho template\n", preferringUserXstartup: true)
            // A file just written may be briefly open for writing in a child another test of this
            // process forked at that moment (until its exec closes it): exec then fails with
            // ETXTBSY, Linux's race, not the script's. Such a run is tried again.
            for _ in 0..<20 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", script]
                process.environment = ["HOME": home, "PATH": "/usr/bin:/bin"]
                let output = Pipe(), errors = Pipe()
                process.standardOutput = output
                process.standardError = errors
                try process.run()
                process.waitUntilExit()
                let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                if said.contains("Text file busy") {
                    Thread.sleep(forTimeInterval: 0.05)
                    continue
                }
                return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            }
            return "text file busy 20 times"
        }
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        #expect(try run() == "template\n")
        try place(".config/tigervnc/xstartup", "tigervnc", executable: false)
        #expect(try run() == "template\n", "a file that is not executable is not run")
        try place(".config/tigervnc/xstartup", "tigervnc")
        #expect(try run() == "tigervnc\n")
        try place(".vnc/xstartup", "vnc")
        #expect(try run() == "vnc\n", "~/.vnc wins where both exist, as in TigerVNC")
    }

    /// auto's script chooses in the shell, as the catalog does in deskd: a desktop whose template
    /// names the X11 sessions it needs is tried only where one of them is installed, the same files.
    @Test func autoLooksForTheX11SessionsItsPicksNeed() throws {
        let templates = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Templates")
        let read = { (name: String) throws -> XstartupTemplate in
            XstartupTemplate(name: name, text: try String(contentsOf: templates.appendingPathComponent(name + ".xstartup"), encoding: .utf8))
        }
        let auto = try read("auto")
        let needing = try auto.picks.map(read).filter { $0.x11Session != nil }
        #expect(needing.map(\.name) == ["gnome", "kde"])
        for template in needing {
            let files = template.x11Session?.files ?? []
            #expect(auto.text.contains("&& xsession \(files.joined(separator: " ")); then"), "auto tries \(template.name) without looking for \(files)")
        }
    }

    @Test func aTemplateSaysWhatItNeedsInItsHeaderAndTheTableSaysWhatIsMissing() {
        let xfce = XstartupTemplate(name: "xfce", text: "#!/bin/sh\n# deskd xstartup: Xfce.\n# needs: startxfce4  dbus-launch (apt-get install xfce4 dbus-x11)\nexec startxfce4\n# needs: ignored\n")
        #expect(xfce.needs.commands == ["startxfce4", "dbus-launch"] && xfce.needs.install == "apt-get install xfce4 dbus-x11")
        #expect(xfce.picks.isEmpty)
        // Only the comment block at the top counts; a template that says nothing needs nothing.
        #expect(XstartupTemplate(name: "t", text: "#!/bin/sh\nexec xterm\n# needs: xterm\n").needs.commands.isEmpty)
        #expect(XstartupTemplate(name: "auto", text: "#!/bin/sh\n# picks: gnome openbox xterm\n").picks == ["gnome", "openbox", "xterm"])

        let table = DesktopTable.render([
            DesktopInfo(name: "auto", installed: true, isDefault: false, starts: "openbox"),
            DesktopInfo(name: "xfce", installed: false, isDefault: false, missing: ["startxfce4"], install: "apt-get install xfce4 dbus-x11"),
            DesktopInfo(name: "xterm", installed: true, isDefault: true),
        ])
        #expect(table == """
            DESKTOP  INSTALLED  NOTES
            auto     yes        starts openbox here
            xfce     no         needs startxfce4: apt-get install xfce4 dbus-x11
            xterm    yes        the default
            """)
        let sentence = DesktopInfo(name: "xfce", installed: false, isDefault: false, missing: ["startxfce4", "dbus-launch"], install: "apt-get install xfce4 dbus-x11")
            .notInstalledSentence(installedOthers: ["openbox", "xterm"])
        #expect(sentence == "the desktop 'xfce' is not installed on this host (startxfce4, dbus-launch are missing); an admin can add it with: apt-get install xfce4 dbus-x11, or start one that is: openbox, xterm (deskctl desktops lists them).")
    }
}
