import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing
import VNCViewer

/// A Wayland desktop (issue 43, part 3): sway run headless as the user, with wayvnc serving its
/// screen on the session's owner-only socket, started, seen and ended as an Xvnc desktop is:
/// ready once RFB answers and its first Wayland client is up, a real VNC viewer (libvncclient)
/// logs in through the socket and sees the desktop drawn at the size asked for, X programs run
/// through Xwayland, another user gets nothing from either, and kill leaves no process.
extension EndToEnd {
    @Suite(.enabled(if: TestEnvironment.canRun && WaylandPrograms.missing.isEmpty,
                    "a Wayland desktop needs root, sway, swaymsg, wayvnc, foot and Xwayland (apt-get install sway wayvnc foot xwayland, as scripts/install-deps does); missing: \(WaylandPrograms.missing.joined(separator: ", "))"))
    struct WaylandDesktopTests {
        @Test func aSwayDesktopIsStartedSeenThroughItsSocketAndEndedLikeAnyOther() throws {
            let wes = try TestUsers.ensure("deskt-wes"), mallory = try TestUsers.ensure("deskt-mallory")
            let daemon = try DaemonUnderTest()
            defer { daemon.shutDown(); TestUsers.reap(wes) }

            let started = try daemon.deskctl(["start", "--user", wes.name, "--desktop", "sway", "--geometry", "1280x800", "--json"])
            try #require(started.status == 0, "start --desktop sway: \(started.stderr)\n\(daemon.logText)")
            let session = try started.decode(Session.self)
            #expect(session.displayServer == .wayland && session.state == .ready && session.password == nil, "\(session)")
            let socket = try #require(session.rfbSocket)
            let names = TestUsers.processes(of: wes).map { DesktopReadinessTests.commandLine(of: $0) }
            #expect(names.contains { $0.hasPrefix("/usr/bin/sway ") } && names.contains { $0.hasPrefix("/usr/bin/wayvnc ") }, "\(names)")
            #expect(ProcFS.executable(of: session.pid) == "/usr/bin/wayvnc", "the session's pid is not wayvnc's")
            // Ready means a client of the desktop's own on the compositor, not wayvnc alone.
            #expect(names.contains { $0 == "foot" || $0.hasPrefix("swaybar") || $0.hasPrefix("swaybg") }, "\(names)")

            // A real viewer through the socket: no password (security type None), the size asked
            // for, and a desktop drawn (the bar and the terminal are more than one colour).
            var drawn = false, info: VNCConnection.Info?
            _ = eventually(10) {
                guard let viewer = try? VNCConnection(host: socket, port: 0, password: nil, timeoutSeconds: 5) else { return false }
                defer { viewer.close() }
                info = viewer.info
                guard viewer.refresh() != nil else { return false }
                drawn = Set(viewer.pixels.prefix(1280 * 40)).count > 2
                return drawn && viewer.info.width == 1280
            }
            #expect(info?.protocolVersion == "3.8" && info?.width == 1280 && info?.height == 800, "\(String(describing: info))")
            #expect(drawn, "the desktop's first 40 rows are one colour: nothing was drawn")

            // X programs reach the desktop through Xwayland, as its owner; another user is refused.
            let recorded = try String(contentsOfFile: URL(fileURLWithPath: socket).deletingLastPathComponent().path + "/" + WaylandVNC.environmentFile, encoding: .utf8)
            let xDisplay = try #require(recorded.split(separator: "\n").first { $0.hasPrefix("DISPLAY=:") }.map { String($0.dropFirst(8)) }, "\(recorded)")
            let owner = try CommandResult.run("/usr/sbin/runuser", ["-u", wes.name, "--", "/usr/bin/xdpyinfo", "-display", xDisplay])
            #expect(owner.status == 0 && owner.stdout.contains("X.Org"), "xdpyinfo -display \(xDisplay) as the owner: \(owner.stderr)")
            let other = try CommandResult.run("/usr/sbin/runuser", ["-u", mallory.name, "--", "/usr/bin/xdpyinfo", "-display", xDisplay])
            #expect(other.status != 0, "another user opened the desktop's Xwayland display \(xDisplay)")
            // Issue 48: Xwayland's socket file is in the session's own /tmp/.X11-unix, which no
            // other user can reach. wlroots always binds its abstract socket too, and nothing in
            // Debian 12 or 13 turns that off: another user can connect there (and so fill
            // Xwayland's client table, which costs the owner X programs in this desktop, never
            // its Wayland ones or its RFB socket). THREAT_MODEL says so; this is that reach.
            let xwayland = Display(Int(xDisplay.dropFirst())!)
            let directory = URL(fileURLWithPath: socket).deletingLastPathComponent().path
            #expect(access(directory + "/X11-unix/X\(xwayland.number)", F_OK) == 0, "Xwayland's socket is not in the session's own directory")
            #expect(asUser(mallory) { xConnectionSetup(xwayland, abstract: false) } == nil, "another user reached Xwayland's socket file")
            #expect(asUser(mallory) { xConnectionSetup(xwayland, abstract: true) } != nil,
                    "Xwayland's abstract socket refused another user: the remaining reach THREAT_MODEL names is gone; update it")

            // Another user gets nothing from the RFB socket: the directory is the owner's.
            let knock = try CommandResult.run("/usr/sbin/runuser", ["-u", mallory.name, "--", "/usr/bin/python3", "-c",
                "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print(s.recv(12))\nexcept OSError as e: print(type(e).__name__)", socket])
            #expect(knock.stdout.trimming() == "PermissionError", "another user connecting to \(socket): \(knock.stdout)\(knock.stderr)")

            // list, probe, and the sentence for the password it has not.
            let listed = try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions
            #expect(listed.map(\.displayServer) == [.wayland] && listed.first?.state == .ready, "\(listed)")
            let probe = try daemon.deskctl(["probe", session.display.description])
            #expect(probe.status == 0 && probe.stdout.contains("WayVNC") && probe.stdout.contains("1280x800"), "\(probe.stdout)\(probe.stderr)")
            let passwd = try daemon.deskctl(["passwd", session.display.description])
            #expect(passwd.status != 0 && passwd.stderr.contains("asks no password"), "\(passwd.stderr)")

            // kill: nothing of the desktop is left, Xwayland's display included.
            let killed = try daemon.deskctl(["kill", session.display.description])
            #expect(killed.status == 0, "\(killed.stderr)")
            #expect(eventually(10) { TestUsers.processes(of: wes).isEmpty }, "left running: \(TestUsers.processes(of: wes).map(DesktopReadinessTests.commandLine(of:)))")
            #expect(eventually(5) { access("/tmp/.X11-unix/X" + xDisplay.dropFirst(), F_OK) != 0 }, "Xwayland's socket \(xDisplay) is left")
        }

        /// Issue 49: a Wayland desktop is a login like the others. Two sway desktops of one user
        /// side by side, each on its own Wayland display, reached by an absolute path; what sway
        /// itself starts (a command sent over its IPC socket) runs with a session bus that
        /// answers (the login's user bus where one runs, else the desktop's own), the login's
        /// XDG_RUNTIME_DIR where PAM made one, and a UTF-8 locale; sway shows no error bar
        /// (no swaynag runs); and the end of one desktop leaves the other's bus and screen alone.
        @Test func twoSwayDesktopsOfOneUserAreLoginsSideBySide() throws {
            let wes = try TestUsers.ensure("deskt-wes"), mallory = try TestUsers.ensure("deskt-mallory")
            let daemon = try DaemonUnderTest()
            defer { daemon.shutDown(); TestUsers.reap(wes) }
            var sessions: [Session] = []
            for _ in 0..<2 {
                let started = try daemon.deskctl(["start", "--user", wes.name, "--desktop", "sway", "--geometry", "1024x768", "--json"])
                try #require(started.status == 0, "start --desktop sway: \(started.stderr)\n\(daemon.logText)")
                sessions.append(try started.decode(Session.self))
            }
            func record(of session: Session) throws -> [String: String] {
                let text = try String(contentsOfFile: URL(fileURLWithPath: session.rfbSocket!).deletingLastPathComponent().path + "/" + WaylandVNC.environmentFile, encoding: .utf8)
                return Dictionary(text.split(separator: "\n").compactMap { line in
                    line.firstIndex(of: "=").map { (String(line[..<$0]), String(line[line.index(after: $0)...])) }
                }) { $1 }
            }
            let records = try sessions.map(record(of:))
            let displays = records.compactMap { $0["WAYLAND_DISPLAY"] }
            #expect(displays.count == 2 && Set(displays).count == 2 && displays.allSatisfy { $0.hasPrefix("/") }, "\(records)")
            let names = TestUsers.processes(of: wes).map { DesktopReadinessTests.commandLine(of: $0) }
            #expect(!names.contains { $0.hasPrefix("swaynag") }, "sway shows an error bar: \(names.filter { $0.hasPrefix("swaynag") })")
            // A bus of the desktop's own (no login bus here) is in the session's directory: another
            // user cannot even connect to it.
            for record in records {
                guard let address = record["DBUS_SESSION_BUS_ADDRESS"], address.hasPrefix("unix:path=") else { continue }
                let path = String(address.dropFirst("unix:path=".count).prefix { $0 != "," })
                let knock = try CommandResult.run("/usr/sbin/runuser", ["-u", mallory.name, "--", "/usr/bin/python3", "-c",
                    "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print('connected')\nexcept OSError as e: print(type(e).__name__)", path])
                #expect(knock.stdout.trimming() == "PermissionError", "another user connecting to the desktop's bus \(path): \(knock.stdout)\(knock.stderr)")
            }

            // From inside each desktop: a command sway runs, as it would a key binding's.
            let runtime = WaylandVNC.loginRuntimeDirectory(uid: wes.uid)
            let loginHasRuntime = access(runtime, F_OK) == 0
            func inside(_ session: Session, _ record: [String: String], tag: String) throws -> [String: String] {
                let report = "\(wes.home)/inside-\(tag).txt"
                unlink(report)
                // A script of its own: sway splits a command line at each semicolon.
                let script = "\(wes.home)/inside-\(tag).sh"
                try "{ env; busctl --user --no-pager status >/dev/null 2>&1; echo BUSCTL=$?; } > \(report).new; mv \(report).new \(report)\n"
                    .write(toFile: script, atomically: true, encoding: .utf8)
                defer { unlink(script) }
                let sent = try CommandResult.run("/usr/sbin/runuser", ["-u", wes.name, "--", "/usr/bin/env", "SWAYSOCK=\(record["SWAYSOCK"] ?? "")",
                                                                        "/usr/bin/swaymsg", "exec", "/bin/sh \(script)"])
                try #require(sent.status == 0, "swaymsg exec: \(sent.stdout)\(sent.stderr)")
                var text = ""
                _ = eventually(10) { text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""; return !text.isEmpty }
                unlink(report)
                return Dictionary(text.split(separator: "\n").compactMap { line in
                    line.firstIndex(of: "=").map { (String(line[..<$0]), String(line[line.index(after: $0)...])) }
                }) { $1 }
            }
            for (index, session) in sessions.enumerated() {
                let seen = try inside(session, records[index], tag: "\(index)")
                #expect(seen["BUSCTL"] == "0", "\(session.display): busctl --user from inside the desktop failed: \(seen)")
                #expect(seen["LANG"].map { $0.lowercased().contains("utf") } == true || seen["LC_ALL"] != nil, "\(session.display): no UTF-8 locale: \(seen["LANG"] ?? "none")")
                if loginHasRuntime {
                    #expect(seen["XDG_RUNTIME_DIR"] == runtime, "\(session.display): XDG_RUNTIME_DIR \(seen["XDG_RUNTIME_DIR"] ?? "none"), not the login's")
                } else {
                    // No login runtime directory here (no pam_systemd): the session's private one.
                    #expect(seen["XDG_RUNTIME_DIR"] == URL(fileURLWithPath: session.rfbSocket!).deletingLastPathComponent().resolvingSymlinksInPath().path, "\(seen)")
                }
                print("WaylandDesktopTests: \(session.display) from inside: XDG_RUNTIME_DIR=\(seen["XDG_RUNTIME_DIR"] ?? "") WAYLAND_DISPLAY=\(seen["WAYLAND_DISPLAY"] ?? "") DBUS_SESSION_BUS_ADDRESS=\(seen["DBUS_SESSION_BUS_ADDRESS"] ?? "") LANG=\(seen["LANG"] ?? "") busctl --user: \(seen["BUSCTL"] ?? "?")")
            }

            // One ends; the other's screen and bus go on.
            let killed = try daemon.deskctl(["kill", sessions[0].display.description])
            #expect(killed.status == 0, "\(killed.stderr)")
            var drawn = false
            _ = eventually(10) {
                guard let viewer = try? VNCConnection(host: sessions[1].rfbSocket!, port: 0, password: nil, timeoutSeconds: 5) else { return false }
                defer { viewer.close() }
                drawn = viewer.refresh() != nil && viewer.info.width == 1024
                return drawn
            }
            #expect(drawn, "the second desktop is not served after the first one's end")
            #expect(try inside(sessions[1], records[1], tag: "after")["BUSCTL"] == "0", "the second desktop's bus is gone with the first desktop")
            #expect(try daemon.deskctl(["kill", sessions[1].display.description]).status == 0)
            #expect(eventually(10) { TestUsers.processes(of: wes).isEmpty }, "left running: \(TestUsers.processes(of: wes).map(DesktopReadinessTests.commandLine(of:)))")
        }

        /// wayvnc asks no password, which is safe only on the owner's socket: a deskd serving
        /// desktops on TCP refuses a Wayland one, in a sentence, and starts nothing.
        @Test func aWaylandDesktopIsRefusedWhereDesktopsAreServedOnTCP() throws {
            let wes = try TestUsers.ensure("deskt-wes")
            let daemon = try DaemonUnderTest(config: "[network]\nlisten = \"loopback\"\n")
            defer { daemon.shutDown(); TestUsers.reap(wes) }
            let refused = try daemon.deskctl(["start", "--user", wes.name, "--desktop", "sway"])
            #expect(refused.status != 0 && refused.stderr.contains("serves only on the owner's socket"), "\(refused.stderr)")
            #expect(TestUsers.processes(of: wes).isEmpty)
        }
    }
}

extension EndToEnd {
    /// A Wayland desktop in a browser (issue 43, part 3): wayvnc asks no password on the owner's
    /// socket and gives every login input and the clipboard, so the gateway reads the desktop's
    /// messages as well as the browser's. Chromium opens a sway desktop from the portal and types
    /// into it; a view-only browser gets none of what the owner copies while a full one gets it.
    @Suite(.enabled(if: TestEnvironment.canRun && WaylandPrograms.missing.isEmpty && BrowserHarness.isReady
                    && UserAccount.named("deskd-web") != nil && access("/etc/pam.d/deskd-web", R_OK) == 0 && access("/usr/bin/wl-copy", X_OK) == 0,
                    "a Wayland desktop in a browser needs root, sway, wayvnc, foot, Xwayland, wl-clipboard, Chromium with Playwright and the deskd-web account (scripts/install-deps)"))
    struct WaylandBrowserTests {
        /// A deskd with its gateway on loopback, and a sway desktop of `owner`'s; the daemon is
        /// shut down and the owner reaped here if the start fails, else by the caller.
        static func swayBehindTheGateway(for owner: UserAccount) throws -> (DaemonUnderTest, Session) {
            let port = try BrowserGatewayTests.freePort()
            let daemon = try DaemonUnderTest(config: "[web]\nlisten = \"127.0.0.1:\(port)\"\n")
            do {
                let started = try daemon.deskctl(["start", "--user", owner.name, "--desktop", "sway", "--json"])
                try #require(started.status == 0, "start --desktop sway: \(started.stderr)")
                return (daemon, try started.decode(Session.self))
            } catch {
                daemon.shutDown()
                TestUsers.reap(owner)
                throw error
            }
        }

        @Test func aSwayDesktopOpensInChromiumFromThePortalAndTakesItsOwnersKeys() throws {
            let owner = try TestUsers.ensure("deskt-wren")
            let password = try PortalTests.givePassword(to: owner)
            let (daemon, base) = try PortalTests.daemon()
            defer { daemon.shutDown(); TestUsers.reap(owner) }
            // Letters, digits, '/', '-' and spaces only: noVNC sends wayvnc the keys' scancodes
            // (QEMU's extended key events), and Playwright types '>' or 'A' without pressing
            // Shift, which a person at a keyboard does press.
            let typed = owner.home + "/wayland-typed-\(UUID().uuidString.prefix(6).lowercased())"
            defer { unlink(typed) }
            let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-wayland-portal-\(UUID().uuidString.prefix(6)).png").path

            let run = try CommandResult.run("/usr/bin/python3", [
                PortalTests.browser, "open", "--url", base, "--user", owner.name, "--password", password,
                "--desktop", "sway", "--type", "touch \(typed)", "--screenshot", screenshot,
            ])
            print("WaylandBrowserTests: the portal's walk (screenshot \(screenshot)): \(run.stdout)")
            let result = try PortalTests.json(run.stdout)
            #expect(result["error"] is NSNull, "the walk stopped: \(result["error"] ?? "")\n\(run.stderr)\n\(daemon.logText.suffix(3000))")
            #expect((result["offered"] as? [String])?.contains("sway") == true, "the start form offers \(result["offered"] ?? "nothing")")
            #expect((result["card"] as? String)?.contains("sway") == true, "\(result["card"] ?? "")")
            #expect(((result["desktop"] as? [String: Any])?["colours"] as? Int ?? 0) > 2, "noVNC showed \(result["desktop"] ?? "nothing")")
            #expect(result["connectedAfterTyping"] as? Bool == true, "the gateway ended the relay: \(daemon.logText.suffix(2000))")
            #expect(eventually(5) { access(typed, F_OK) == 0 }, "the owner's keys did not reach foot through wayvnc")
            #expect(!daemon.logText.contains("desktop's messages refused"), "\(daemon.logText.suffix(2000))")

            let sessions = try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions
            #expect(sessions.map(\.displayServer) == [.wayland], "\(sessions)")
            for session in sessions { _ = try daemon.deskctl(["kill", session.display.description]) }
            #expect(eventually(10) { TestUsers.processes(of: owner).isEmpty }, "left running: \(TestUsers.processes(of: owner).map(DesktopReadinessTests.commandLine(of:)))")
        }

        /// The cold review's attack on the measured relay, against the real wayvnc: a SetEncodings
        /// of 33 entries, of which wayvnc (neatvnc) reads 32, has the 33rd taken for the start of
        /// a SetPixelFormat that swallows the next fence's header, and the fences' payloads read
        /// as key events (each ending in a clipboard header that swallows the next fence's
        /// header). Typed as plain key events through a full link, the same keys run `touch` in
        /// the desktop's terminal, so the test can fail; smuggled by a view-only browser, they
        /// must not, and the desktop must still answer.
        @Test func aViewOnlyBrowserCannotSmuggleKeysPastTheFilter() throws {
            let owner = try TestUsers.ensure("deskt-sly")
            let (daemon, session) = try Self.swayBehindTheGateway(for: owner)
            defer { daemon.shutDown(); TestUsers.reap(owner) }
            func keys(_ text: String) -> [[UInt8]] {
                (text.unicodeScalars.map { UInt32($0.value) } + [0xFF0D]).flatMap { keysym in
                    [UInt8(1), 0].map { down in [4, down, 0, 0] + (0..<4).reversed().map { UInt8(truncatingIfNeeded: keysym >> ($0 * 8)) } }
                }
            }
            let typed = owner.home + "/typed-\(UUID().uuidString.prefix(6).lowercased())"
            let smuggled = owner.home + "/smuggled-\(UUID().uuidString.prefix(6).lowercased())"
            defer { unlink(typed); unlink(smuggled) }

            let full = try LinkViewer.open(try BrowserGatewayTests.link(daemon, session.display, as: owner.name))
            for key in keys("touch \(typed)") { try full.client.sendFrame(key) }
            #expect(eventually(5) { access(typed, F_OK) == 0 }, "plain key events through a full link typed nothing: the smuggled ones below prove nothing")

            let watcher = try LinkViewer.open(try BrowserGatewayTests.link(daemon, session.display, viewOnly: true, as: owner.name))
            let encodings = [Int32](repeating: 7, count: 32) + [0]
            try watcher.client.sendFrame([2, 0, 0, UInt8(encodings.count)] + encodings.flatMap { value in (0..<4).reversed().map { UInt8(truncatingIfNeeded: UInt32(bitPattern: value) >> ($0 * 8)) } })
            let cutHeader: [UInt8] = [6, 0, 0, 0, 0, 0, 0, 9]   // swallows the next fence's 9-byte header
            var events = keys("touch \(smuggled)")[...]
            var first = true
            while !events.isEmpty {
                // The first payload's 7 bytes end the false SetPixelFormat (true colour: its 4th byte, the fence's padding).
                let room = (64 - (first ? 7 : 0) - cutHeader.count) / 8
                let payload = (first ? [UInt8](repeating: 0, count: 7) : []) + events.prefix(room).flatMap { $0 } + cutHeader
                events = events.dropFirst(room)
                try watcher.client.sendFrame([248, 0, 0, 1, 0, 0, 0, 0, UInt8(payload.count)] + payload)
                first = false
            }
            Thread.sleep(forTimeInterval: 2)
            #expect(access(smuggled, F_OK) != 0, "a view-only browser smuggled key events into the desktop")
            let probe = try daemon.deskctl(["probe", session.display.description])
            #expect(probe.status == 0, "the desktop stopped answering: \(probe.stderr)")
            #expect(try daemon.deskctl(["kill", session.display.description]).status == 0)
        }

        /// What the owner copies (Wayland's clipboard and its primary selection, set with
        /// wl-copy) reaches the owner's own browser, so the silence below is not a test that cannot
        /// fail, and never a view-only one: wayvnc sends it to both, the gateway drops it.
        @Test func aViewOnlyBrowserGetsNoneOfTheOwnersWaylandClipboard() throws {
            let owner = try TestUsers.ensure("deskt-clem")
            let (daemon, session) = try Self.swayBehindTheGateway(for: owner)
            defer { daemon.shutDown(); TestUsers.reap(owner) }
            let directory = try #require(session.rfbSocket.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path })
            let recorded = try String(contentsOfFile: directory + "/" + WaylandVNC.environmentFile, encoding: .utf8)
            let wayland = try #require(recorded.split(separator: "\n").first { $0.hasPrefix("WAYLAND_DISPLAY=") }.map { String($0.dropFirst(16)) })

            let full = try LinkViewer.open(try BrowserGatewayTests.link(daemon, session.display, as: owner.name))
            let watcher = try LinkViewer.open(try BrowserGatewayTests.link(daemon, session.display, viewOnly: true, as: owner.name))
            var seenByOwner: [String] = [], seenByWatcher: [String] = []
            for selection in ["", "--primary"] {
                let secret = "secret\(selection)-\(UUID().uuidString.prefix(8))"
                // wl-copy stays behind to serve the selection until the compositor ends.
                let copy = try CommandResult.run("/usr/sbin/runuser", ["-u", owner.name, "--", "/bin/bash", "-c",
                    GatewayHardeningTests.closingInheritedDescriptors
                        + "XDG_RUNTIME_DIR=\(directory) WAYLAND_DISPLAY=\(wayland) wl-copy \(selection) '\(secret)' >/dev/null 2>&1"])
                #expect(copy.status == 0, "wl-copy \(selection): \(copy.stderr)")
                for _ in 0..<10 where !seenByOwner.contains(secret) {
                    seenByOwner += try full.cutTexts(for: 0.3)
                    seenByWatcher += try watcher.cutTexts(for: 0.3)
                }
                seenByWatcher += try watcher.cutTexts(for: 1)
                #expect(seenByOwner.contains(secret), "the owner's full browser never got the copy \(selection): \(seenByOwner)")
                #expect(!seenByWatcher.contains(secret), "a view-only browser got the owner's copy \(selection): \(seenByWatcher)")
            }
            #expect(seenByWatcher.isEmpty, "\(seenByWatcher)")
            #expect(try daemon.deskctl(["kill", session.display.description]).status == 0)
            #expect(eventually(10) { TestUsers.processes(of: owner).isEmpty }, "left running: \(TestUsers.processes(of: owner).map(DesktopReadinessTests.commandLine(of:)))")
        }
    }
}

enum WaylandPrograms {
    static let paths = ["/usr/bin/sway", "/usr/bin/swaymsg", "/usr/bin/wayvnc", "/usr/bin/foot", "/usr/bin/Xwayland", "/usr/bin/xdpyinfo"]
    static var missing: [String] { paths.filter { access($0, X_OK) != 0 } }
}
