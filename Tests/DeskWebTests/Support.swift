import DeskPOSIX
import TestSupport
import DeskCore
import DeskFrontProtocol
import DeskWeb
import DeskLinux
import Foundation
import Glibc
import Logging
import Synchronization

/// deskd's side, faked: tokens and cookies in memory, each good once.
actor FakeAuthority: GatewayAuthority {
    private var tokens: [String: Bool] = [:]
    private var cookies: [String: GatewayGrant] = [:]
    private var nextRelay: UInt64 = 1
    let endpoint: String
    let password: String
    /// The pid that must serve `endpoint`: this process for a `FakeVNCServer`, the server's for a `RealXvnc`.
    let xvnc: pid_t
    /// Relays the gateway said have ended.
    private(set) var ended: Set<UInt64> = []

    init(endpoint: String, password: String, xvnc: pid_t = getpid()) {
        self.endpoint = endpoint
        self.password = password
        self.xvnc = xvnc
    }

    func mint(viewOnly: Bool) -> String {
        let token = "t" + String(UInt64.random(in: 0...UInt64.max), radix: 16) + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        tokens[token] = viewOnly
        return token
    }

    func exchange(token: String) async -> (cookie: String, viewOnly: Bool)? {
        guard let viewOnly = tokens.removeValue(forKey: token) else { return nil }
        let cookie = "c" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        cookies[cookie] = GatewayGrant(sessionID: "3", viewOnly: viewOnly, relay: nextRelay)
        nextRelay += 1
        return (cookie, viewOnly)
    }

    /// As deskd does: the grant, and the desktop logged in to with the password (checking the
    /// socket's peer is the Xvnc), off the caller's thread.
    func redeem(cookie: String) async -> Redemption? {
        guard let grant = cookies.removeValue(forKey: cookie) else { return nil }
        let endpoint = endpoint, xvnc = xvnc, password = password
        let desktop = await onDedicatedThread {
            Result { () throws(RFBClient.Failure) -> Int32 in
                let client = try RFBClient.connect(.unixSocket(path: endpoint), host: "127.0.0.1", xvnc: xvnc, timeout: .seconds(5))
                try client.authenticate(try client.greet(), password: password)
                return try client.duplicateSocket()
            }
        }
        return Redemption(grant: grant, desktop: desktop.mapError { DesktopRefusal($0.description) })
    }

    nonisolated func relayEnded(_ grant: GatewayGrant) {
        Task { await self.noteEnded(grant.relay) }
    }

    private func noteEnded(_ relay: UInt64) {
        ended.insert(relay)
    }
}

/// Debian's Xtigervnc on a Unix socket in a scratch directory, with VNC authentication and a
/// small framebuffer; no X client draws on it.
///
/// posix_spawn with an empty signal mask, not Foundation's Process: the test runner's threads
/// block SIGTERM, a child started by Process inherits that, and an Xvnc that cannot see SIGTERM
/// outlives its test.
final class RealXvnc {
    static let executable = "/usr/bin/Xtigervnc"
    static var isInstalled: Bool { access(executable, X_OK) == 0 }
    static let width = 128, height = 96

    let socket: String
    let pid: pid_t
    private let display: Int

    /// Starts one on the first free display from :700 on (far above what deskd's tests allocate),
    /// and waits for its socket.
    init(directory: String, password: String) throws {
        let passwordFile = directory + "/passwd"
        guard FileManager.default.createFile(atPath: passwordFile, contents: Data(VNCPasswordFile.encode(password: password)),
                                             attributes: [.posixPermissions: 0o600]) else { throw POSIXError(.EIO) }
        socket = directory + "/xvnc.sock"
        for display in 700..<740 where access("/tmp/.X\(display)-lock", F_OK) != 0 && access("/tmp/.X11-unix/X\(display)", F_OK) != 0 {
            let pid = try Self.spawn([":\(display)", "-nolisten", "tcp", "-rfbauth", passwordFile, "-geometry", "\(Self.width)x\(Self.height)",
                                      "-depth", "24", "-AlwaysShared", "-rfbport", "-1", "-rfbunixpath", socket, "-rfbunixmode", "0600",
                                      "-SecurityTypes", "VncAuth"])
            var exited = false
            for _ in 0..<200 where access(socket, F_OK) != 0 {
                if waitpid(pid, nil, WNOHANG) == pid { exited = true; break }
                usleep(50_000)
            }
            if !exited && access(socket, F_OK) == 0 {
                self.pid = pid
                self.display = display
                return
            }
            // Another X server took the display first: the next one.
            if !exited { kill(pid, SIGKILL); waitpid(pid, nil, 0) }
        }
        throw POSIXError(.EADDRINUSE)
    }

    private static func spawn(_ arguments: [String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        return pid
    }

    /// SIGTERM, and SIGKILL if it has not gone within five seconds (its lock files then stay,
    /// and are removed here).
    func stop() {
        kill(pid, SIGTERM)
        for _ in 0..<100 {
            if waitpid(pid, nil, WNOHANG) == pid { return }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, nil, 0)
        unlink("/tmp/.X\(display)-lock")
        unlink("/tmp/.X11-unix/X\(display)")
    }
}

let quietLogger = Logger(label: "deskd.gateway.test") { _ in SwiftLogNoOpLogHandler() }



extension Gateway {
    /// Serves as in deskd-web: on a socket bound for it (here by the test, on the configuration's
    /// host and port), with the TLS files its configuration names read whole, as deskd reads
    /// them for its web front.
    func serveOnLoopback() async throws {
        let configuration = configuration
        let tls = try configuration.tlsCertificatePath.map { certificate in
            let key = configuration.tlsKeyPath ?? ""
            return TLSMaterial(certificatePath: certificate, keyPath: key, certificatePEM: try String(contentsOfFile: certificate, encoding: .utf8),
                               keyPEM: try String(contentsOfFile: key, encoding: .utf8))
        }
        let fd = try InternetSocketAddress.listen(host: configuration.host, port: configuration.port)
        try await serve(listeningSocket: fd, tls: tls)
    }
}
