import DeskGateway
import Foundation
import Glibc
import Testing

/// A real Xtigervnc and a real headless Chromium running Debian's noVNC through the gateway:
/// opt-in (DESKGATEWAY_BROWSER_SMOKE=1), since it needs those packages and takes seconds. It
/// leaves a screenshot at /tmp/deskgateway-smoke.png.
extension GatewayTests {
@Suite(.enabled(if: ProcessInfo.processInfo.environment["DESKGATEWAY_BROWSER_SMOKE"] == "1"
                && FileManager.default.fileExists(atPath: "/usr/bin/chromium")
                && FileManager.default.fileExists(atPath: "/usr/share/novnc/vnc.html")))
struct BrowserSmokeTests {
    @Test func chromiumOpensALinkAndNoVNCShowsTheDesktop() async throws {
        let scratch = try Scratch()
        let password = "secret12"
        let passwordFile = scratch.path + "/passwd"
        try run("/bin/sh", ["-c", "printf '%s\\n' \(password) | vncpasswd -f > \(passwordFile)"])
        let socket = scratch.path + "/rfb.sock"
        let display = ":\(70 + Int.random(in: 0..<20))"
        let xvnc = Process()
        xvnc.executableURL = URL(fileURLWithPath: "/usr/bin/Xtigervnc")
        xvnc.arguments = [display, "-rfbport", "-1", "-rfbunixpath", socket, "-rfbunixmode", "0600", "-SecurityTypes", "VncAuth",
                          "-PasswordFile", passwordFile, "-geometry", "800x600", "-depth", "24", "-nolisten", "tcp"]
        try xvnc.run(quietly: true)
        defer { xvnc.end() }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) { usleep(50_000) }
        try run("/usr/bin/xsetroot", ["-display", display, "-solid", "#3060a0"])
        let xterm = Process()
        xterm.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
        xterm.arguments = ["-display", display, "-geometry", "60x10+40+40", "-e", "sh -c 'echo deskd gateway smoke; sleep 60'"]
        try xterm.run(quietly: true)
        defer { xterm.end() }

        let authority = SmokeAuthority(grant: GatewayGrant(sessionID: "smoke", endpoint: socket, xvnc: xvnc.processIdentifier,
                                                           password: password, viewOnly: false))
        let gateway = Gateway(configuration: GatewayConfiguration(host: "127.0.0.1", port: 0), authority: authority, logger: quietLogger)
        let running = Task { try await gateway.run() }
        defer { running.cancel() }
        let port = try await gateway.port()
        let shot = "/tmp/deskgateway-smoke.png"
        unlink(shot)
        // Chromium may linger after its screenshot while the WebSocket is open: the budget ends it.
        try await withTaskExecutorPreference(DedicatedThreadExecutor.shared) { try run("/usr/bin/timeout", ["40", "/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,700", "--virtual-time-budget=15000",
                                      "--screenshot=\(shot)", "http://127.0.0.1:\(port)/open#token=smoke-token"]) }
        #expect(FileManager.default.fileExists(atPath: shot))
        let snapshot = gateway.metrics.snapshot
        #expect(snapshot.exchangesAccepted == 1, "\(snapshot)")
        #expect(snapshot.relaysOpenedTotal == 1, "\(snapshot)")
    }

    private func run(_ path: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        try process.run(quietly: true)
        process.waitUntilExit()
    }
}
}

actor SmokeAuthority: GatewayAuthority {
    let grant: GatewayGrant
    private var tokenUsed = false
    private var cookieUsed = false

    init(grant: GatewayGrant) { self.grant = grant }

    func exchange(token: String) async -> (cookie: String, viewOnly: Bool)? {
        guard token == "smoke-token", !tokenUsed else { return nil }
        tokenUsed = true
        return ("smoke-cookie", grant.viewOnly)
    }

    func redeem(cookie: String) async -> GatewayGrant? {
        guard cookie == "smoke-cookie", !cookieUsed else { return nil }
        cookieUsed = true
        return grant
    }
}

extension Process {
    /// Runs with no output: a child that outlived the test holding swift test's output pipe
    /// would keep swift test waiting.
    func run(quietly: Bool) throws {
        standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        standardError = FileHandle(forWritingAtPath: "/dev/null")
        try run()
    }

    /// SIGKILL and wait: the test runner's children do not all take SIGTERM.
    func end() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }
}
