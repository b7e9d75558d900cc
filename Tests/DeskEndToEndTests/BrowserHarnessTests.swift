import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// The browser harness (Tests/browser/desktop_in_browser.py) against the usual recipe, Debian's
/// websockify serving noVNC and relaying to a real Xtigervnc's Unix socket: a real headless
/// Chromium connects, reads a desktop that is not blank off noVNC's canvas, types into an
/// xterm, and tells a refusal from a connection. This is the harness deskd's own gateway is
/// tested with; these tests show it works before the gateway is there.
extension EndToEnd {
@Suite(.enabled(if: BrowserHarness.isReady && WebsockifyDesktop.hasWebsockify, WebsockifyDesktop.skipReason))
struct BrowserHarnessTests {
    /// Over https too, with a throwaway self-signed certificate, as the gateway's tests will be.
    @Test(arguments: [false, true])
    func chromiumShowsTheDesktopAndTypesIntoItsXterm(tls: Bool) throws {
        let account = try TestUsers.ensure("deskt-browser")
        let desktop = try WebsockifyDesktop(account: account, tls: tls)
        defer { desktop.shutDown() }

        let screenshot = desktop.directory + "/browser.png"
        let typed = desktop.directory + "/typed"
        let run = try BrowserHarness.open(desktop.url, screenshot: screenshot, type: "echo hi > \(typed)")
        let page = run.outcome
        #expect(run.status == 0, "\(page.summary)\n\(run.stderr)")
        #expect(page.connected && !page.refused, "\(page.summary)")
        // resize=remote: Xtigervnc takes the browser window's size.
        #expect(page.width == 1280 && page.height == 800, "\(page.summary)")
        // A black root window alone is one colour; the xterm adds its white, its black text and more.
        #expect(page.nonBlank && page.distinctColours > 1, "\(page.summary)")
        #expect(page.status?.contains("Connected") == true, "\(page.summary)")
        #expect(FileManager.default.fileExists(atPath: screenshot))
        // The keys went browser → websockify → Xvnc → the xterm under the pointer → its shell.
        #expect(eventually(5) { (try? String(contentsOfFile: typed, encoding: .utf8)) == "hi\n" }, "\(page.summary)")
        if tls { #expect(run.outcome.webSockets.first?.url.hasPrefix("wss://") == true, "\(page.summary)") }
        desktop.keepScreenshot(screenshot)
    }

    @Test func viewOnlyInTheLinkKeepsTheKeysInTheBrowserUnlessTheHarnessIgnoresIt() throws {
        let account = try TestUsers.ensure("deskt-browser")
        let desktop = try WebsockifyDesktop(account: account)
        defer { desktop.shutDown() }

        // noVNC honours view_only=1 itself: the desktop shows, the keys never leave the browser.
        let kept = desktop.directory + "/kept"
        let viewOnly = try BrowserHarness.open(desktop.url + "&view_only=1", type: "echo typed > \(kept)")
        #expect(viewOnly.status == 0 && viewOnly.outcome.nonBlank, "\(viewOnly.outcome.summary)")
        usleep(500_000)
        #expect(!FileManager.default.fileExists(atPath: kept))

        // --ignore-view-only makes noVNC send them anyway, as a hostile client would: only a
        // server that drops them (deskd's gateway, not websockify) stops them then.
        let sent = desktop.directory + "/sent"
        let hostile = try BrowserHarness.open(desktop.url + "&view_only=1", type: "echo typed > \(sent)", ignoreViewOnly: true)
        #expect(hostile.status == 0 && hostile.outcome.url?.contains("view_only=0") == true, "\(hostile.outcome.summary)")
        #expect(eventually(5) { FileManager.default.fileExists(atPath: sent) }, "\(hostile.outcome.summary)")
    }

    @Test func aLinkWithNothingBehindItIsAReportedRefusal() throws {
        let account = try TestUsers.ensure("deskt-browser")
        let desktop = try WebsockifyDesktop(account: account, target: "/nonexistent/rfb.sock")
        defer { desktop.shutDown() }

        // The page loads, the WebSocket opens, websockify finds no server and closes it.
        let refused = try BrowserHarness.open(desktop.url, timeout: 15, expectRefusal: true)
        #expect(refused.status == 0, "\(refused.outcome.summary)")
        #expect(refused.outcome.refused && !refused.outcome.connected, "\(refused.outcome.summary)")
        #expect(refused.outcome.status == "Failed to connect to server", "\(refused.outcome.summary)")
        // ...and without --expect-refusal the same page is a failure, not a pass.
        let expectingADesktop = try BrowserHarness.open(desktop.url, timeout: 15)
        #expect(expectingADesktop.status == 1 && !expectingADesktop.outcome.connected)

        // A page that is not noVNC at all (an HTTP error) is a refusal too.
        let missing = try BrowserHarness.open("http://127.0.0.1:\(desktop.port)/no-such-page.html", timeout: 10, expectRefusal: true)
        #expect(missing.status == 0 && missing.outcome.httpStatus == 404, "\(missing.outcome.summary)")
    }
}
}

/// A desktop served the way it is without deskd's gateway: a real Xtigervnc whose RFB is on a
/// 0600 Unix socket only (as deskd's sessions are), an xterm on it, and Debian's websockify
/// serving noVNC on a loopback port and relaying to that socket. All three run as a throwaway
/// user, so ending that user's processes ends them; the harness (root, as CI is) drives Chromium.
final class WebsockifyDesktop {
    static let websockify = "/usr/bin/websockify"
    static var hasWebsockify: Bool { access(websockify, X_OK) == 0 && access("/usr/bin/xterm", X_OK) == 0 }
    static let skipReason: Comment = "the browser harness's self-test needs Debian's chromium, novnc, websockify and xterm and Playwright for Python in /opt/deskd-test-venv; scripts/install-deps installs them (`Tests/browser/desktop_in_browser.py check` says what is missing)"

    let account: UserAccount
    let display: Display
    /// The user's, 0700: the X authority, the RFB socket, and what the xterm's shell writes.
    let directory: String
    let port: Int
    private var children: [pid_t] = []

    let tls: Bool

    var url: String { "\(tls ? "https" : "http")://127.0.0.1:\(port)/vnc.html#autoconnect=1&resize=remote&path=websockify" }

    /// `target` replaces the RFB socket websockify relays to (a path where nothing listens, for a
    /// refusal); `tls` serves https and wss only, with a self-signed certificate made here.
    init(account: UserAccount, target: String? = nil, tls: Bool = false) throws {
        self.account = account
        self.tls = tls
        directory = "/tmp/deskd-browser-\(UUID().uuidString.prefix(8))"
        guard mkdir(directory, 0o700) == 0, chown(directory, account.uid, account.gid) == 0 else { throw Failed("cannot make \(directory)") }
        let snapshot = DisplaySnapshot.take(displays: 1...99)
        display = try DisplayAllocator().choose(requested: nil) { snapshot.occupancy(of: $0) }
        port = try Self.freeLoopbackPort()

        let authority = directory + "/Xauthority"
        let cookie = XAuthority.generate().fileContents(for: display)
        guard FileManager.default.createFile(atPath: authority, contents: Data(cookie), attributes: [.posixPermissions: 0o600]),
              chown(authority, account.uid, account.gid) == 0 else { throw Failed("cannot write \(authority)") }
        let socket = directory + "/rfb.sock"
        let environment = ["HOME": account.home, "USER": account.name, "PATH": "/usr/bin:/bin", "SHELL": "/bin/sh"]

        // Everything below must be undone if a later step throws.
        do {
            let xvnc = try launch("/usr/bin/Xtigervnc", [display.description, "-auth", authority, "-nolisten", "tcp",
                                                          "-geometry", "1280x800", "-depth", "24", "-SecurityTypes", "None",
                                                          "-rfbport", "-1", "-rfbunixpath", socket, "-rfbunixmode", "0600"],
                                  environment, umask: 0o077)
            guard eventually(20, {
                if case .answered = RFBHandshake.attempt(.unixSocket(path: socket), xvnc: xvnc, timeoutMilliseconds: 500) { true } else { false }
            }) else { throw Failed("Xtigervnc did not answer on \(socket)") }
            // With no window manager, X gives the keys to the window under the pointer: the
            // xterm covers the middle of the screen, where the harness clicks.
            _ = try launch("/usr/bin/xterm", ["-geometry", "160x50+0+0"],
                           environment.merging(["DISPLAY": display.description, "XAUTHORITY": authority]) { $1 })
            var relay = ["--web", "/usr/share/novnc", "--unix-target", target ?? socket]
            if tls {
                let certificate = directory + "/cert.pem", key = directory + "/key.pem"
                let made = try CommandResult.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                                                      "-nodes", "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=127.0.0.1"])
                guard made.status == 0, chown(certificate, account.uid, account.gid) == 0, chown(key, account.uid, account.gid) == 0 else {
                    throw Failed("cannot make a certificate: \(made.stderr)")
                }
                relay += ["--cert", certificate, "--key", key, "--ssl-only"]
            }
            _ = try launch(Self.websockify, relay + ["127.0.0.1:\(port)"], environment)
            guard eventually(20, { Self.loopbackAccepts(port: self.port) }) else { throw Failed("websockify did not listen on port \(port)") }
        } catch {
            shutDown()
            throw error
        }
    }

    /// Each child gets a session of its own (SessionLauncher), so its whole group can be ended.
    private func launch(_ executable: String, _ arguments: [String], _ environment: [String: String], umask: mode_t = 0o022) throws -> pid_t {
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devNull) }
        let pid = try SessionLauncher.launch(.init(executable: executable, arguments: arguments, account: account,
                                                   environment: environment, logFD: devNull, cgroup: nil, umask: umask))
        children.append(pid)
        return pid
    }

    /// Ends every process this desktop started (websockify's per-connection children and the
    /// xterm's shell with them), then removes the display's lock and socket and the directory.
    func shutDown() {
        for pid in children.reversed() {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
        }
        children = []
        TestUsers.reap(account)
        _ = eventually { TestUsers.processes(of: account).isEmpty }
        unlink(display.lockPath)
        unlink(display.socketPath)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// With DESKD_TEST_SCREENSHOTS set to a directory, a screenshot outlives the test there.
    func keepScreenshot(_ path: String) {
        guard let keep = ProcessInfo.processInfo.environment["DESKD_TEST_SCREENSHOTS"], !keep.isEmpty else { return }
        let destination = URL(fileURLWithPath: keep).appendingPathComponent("websockify-novnc-\(tls ? "https" : "http").png").path
        try? FileManager.default.removeItem(atPath: destination)
        try? FileManager.default.copyItem(atPath: path, toPath: destination)
    }

    struct Failed: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A port the kernel hands out on loopback, free a moment ago.
    static func freeLoopbackPort() throws -> Int {
        guard let port = InternetSocketAddress.freeLoopbackPort() else { throw Failed("cannot bind a loopback port: errno \(errno)") }
        return port
    }

    static func loopbackAccepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return InternetSocketAddress.loopback(port: port).withSockaddr { connect(fd, $0, $1) } == 0
    }
}
