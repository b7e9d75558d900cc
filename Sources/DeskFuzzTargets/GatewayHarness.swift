import DeskCore
import DeskFrontProtocol
import DeskWeb
import Dispatch
import Glibc
import Logging
import NIOCore
import NIOEmbedded
import Synchronization

/// One browser connection to the gateway, in memory: the gateway's own pipeline (NIO's HTTP/1
/// decoder, the WebSocket upgrader and frame decoder, the routes, the portal's API, noVNC's
/// files) on an NIOAsyncTestingChannel, fed bytes as a browser would send them.
///
/// deskd's side is `Authority`, which answers at once and keeps to a few fixed rules, so what
/// the gateway does with an input is the same on every run. The desktop is never reached (a
/// relay needs NIO's sockets): a granted WebSocket gets the desktop's refusal in RFB, after the
/// gateway has read the browser's frames up to that point.
final class GatewayHarness: Sendable {
    static let shared = GatewayHarness()

    /// The address a connection comes from: the trusted proxy (single sign-on is believed) or
    /// anyone else (a request naming a user is forged).
    static let proxy = "127.0.0.1", stranger = "127.0.0.2"
    static let singleSignOnHeader = "X-Remote-User"
    /// What noVNC's directory must never let out: a file beside it. Its bytes are no UTF-8, so
    /// nothing the gateway writes from text (a header, a JSON answer echoing a request) can
    /// hold them: only a file read could.
    static let secret: [UInt8] = [0xFF, 0x00, 0xFE] + Array("deskd-fuzz: this file is outside the gateway's directory".utf8) + [0xFE, 0x00, 0xFF]

    let gateway: Gateway
    let authority = Authority()
    let files: String

    private init() {
        var template = Array("/tmp/deskd-fuzz-novnc.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "the gateway harness could not make its directory")
        let root = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
        files = root + "/novnc"
        mkdir(files, 0o755)
        Self.write(files + "/vnc.html", "<!doctype html><title>noVNC</title>")
        Self.write(files + "/app.js", "export const app = 1;")
        Self.write(root + "/secret.html", Self.secret)
        symlink(root + "/secret.html", files + "/link.html")
        let configuration = GatewayConfiguration(port: 8080, novncDirectory: files, trustedProxies: [Self.proxy], singleSignOnHeader: Self.singleSignOnHeader)
        // A page of the portal's shape (deskd hands the front Templates/portal's files; their text is no parser's input).
        let page = PortalPage(html: "<!DOCTYPE html><title>deskd</title><script src=\"/portal.js\"></script>",
                              style: "body { margin: 0; }", script: "'use strict';")
        gateway = Gateway(configuration: configuration, authority: authority, portal: authority, portalPage: page,
                          logger: Logger(label: "deskd-fuzz", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    private static func write(_ path: String, _ text: String) {
        write(path, Array(text.utf8))
    }

    private static func write(_ path: String, _ bytes: [UInt8]) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        precondition(fd >= 0, "the gateway harness could not write \(path)")
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// Feeds `stream` to one new connection from `peer`, in `pieces`, and returns what the
    /// gateway sent back. It blocks its thread until then (libFuzzer calls a target on its own
    /// thread): a caller on Swift's cooperative pool must have a thread of its own to spare, as
    /// the connection's work and deskd's answers need the pool.
    func serve(_ pieces: [ArraySlice<UInt8>], from peer: String) -> [UInt8] {
        let done = DispatchSemaphore(value: 0)
        let sent = Mutex<[UInt8]>([])
        Task.detached {
            let answer = await self.connection(pieces, from: peer)
            sent.withLock { $0 = answer }
            done.signal()
        }
        done.wait()
        return sent.withLock { $0 }
    }

    private func connection(_ pieces: [ArraySlice<UInt8>], from peer: String) async -> [UInt8] {
        let channel = NIOAsyncTestingChannel()
        var sent: [UInt8] = []
        do {
            // As the listener hands a connection over: its peer known, then the pipeline, then active.
            let address = try SocketAddress(ipAddress: peer, port: 50_000)
            channel.remoteAddress = address
            // Both addresses are this host's: each is an account, as the kernel would say.
            let owner: UInt32 = peer == Self.proxy ? 33 : 1000
            try await channel.testingEventLoop.executeInContext { try self.gateway.adopt(channel, owner: owner) }
            try await channel.connect(to: address)
            for piece in pieces {
                guard channel.isActive else { break }
                _ = try? await channel.writeInbound(channel.allocator.buffer(bytes: piece))
                await settle(channel, into: &sent)
            }
        } catch {
            // A refusal the pipeline raised (a malformed request, a frame too large): answered already.
        }
        // Every deadline the connection set (a request dribbled, a handshake not finished, a
        // close frame's grace), whether or not it is still open: a task left scheduled would
        // hold the channel, and the loop with it, for ever.
        await channel.testingEventLoop.advanceTime(by: .hours(2))
        await settle(channel, into: &sent)
        if channel.isActive {
            _ = try? await channel.close()
            await settle(channel, into: &sent)
        }
        await channel.testingEventLoop.shutdownGracefully()
        return sent
    }

    /// Runs what the connection has to do until deskd's answers (which come back from other
    /// threads) are in and nothing more is sent: the gateway counts the questions it has out.
    private func settle(_ channel: NIOAsyncTestingChannel, into sent: inout [UInt8]) async {
        // An answer comes back on the loop's queue as a whole (its count and what it sends in
        // one turn): two rounds with nothing sent and nothing out mean nothing more will come.
        var still = 0, rounds = 0
        while still < 2 && rounds < 100_000 {
            rounds += 1
            await channel.testingEventLoop.run()
            var more = false
            while let buffer = try? await channel.readOutbound(as: ByteBuffer.self) {
                sent += buffer.readableBytesView
                more = true
            }
            if more || gateway.questionsInFlight > 0 {
                still = 0
                if !more { await Task.yield() }
            } else {
                still += 1
            }
        }
    }
}

/// deskd, as the harness plays it: a token "t…" trades for the cookie "c…" (view-only when it
/// ends in "v"); a token "n…" is a link for named viewers, which opens only for a browser
/// logged in to the portal as alice; a cookie "c…" is redeemed once per connection. A portal
/// login with the password "right" succeeds (as the user named), "ask" asks a question first;
/// a portal cookie "p-USER" is USER's login, whose CSRF token is "csrf-USER".
final class Authority: GatewayAuthority, PortalAuthority {
    private let relays = Atomic<UInt64>(0)

    static func identity(of cookie: String) -> WebIdentity? {
        guard cookie.hasPrefix("p-"), cookie.count > 2 else { return nil }
        let user = String(cookie.dropFirst(2))
        return WebIdentity(user: user, uid: user == "root" ? 0 : 1000, isAdmin: user == "root", csrf: "csrf-" + user, idleSeconds: 900, lifetimeSeconds: 3600)
    }

    // MARK: Links and relays

    func exchange(token: String) async -> (cookie: String, viewOnly: Bool)? {
        token.hasPrefix("t") ? ("c" + token.dropFirst(), token.hasSuffix("v")) : nil
    }

    func exchange(token: String, portalCookie: String?, signedOn: String?) async -> LinkExchange {
        if token.hasPrefix("n") {
            return portalCookie == "p-alice" && (signedOn == nil || signedOn == "alice") ? .granted(cookie: "c" + token.dropFirst(), viewOnly: true) : .forNamedViewers
        }
        return token.hasPrefix("t") ? .granted(cookie: "c" + token.dropFirst(), viewOnly: token.hasSuffix("v")) : .refused
    }

    func redeem(cookie: String) async -> Redemption? {
        guard cookie.hasPrefix("c") else { return nil }
        let grant = GatewayGrant(sessionID: "fuzz", viewOnly: cookie.hasSuffix("v"), relay: relays.add(1, ordering: .relaxed).newValue)
        return Redemption(grant: grant, desktop: .failure(DesktopRefusal("the fuzzer has no desktop")))
    }

    // MARK: The portal

    func login(user: String, password: String, from peer: WebPeer) async -> LoginStep? {
        switch password {
        case "right": Self.identity(of: "p-" + user).map { .loggedIn(cookie: "p-" + user, identity: $0) } ?? .refused(message: "No such account.")
        case "ask": .question(attempt: "a-" + user, text: "One-time code:", echo: false, messages: ["Your code was sent."])
        default: .refused(message: "The name or the password is wrong.")
        }
    }

    func answer(attempt: String, text: String, from peer: WebPeer) async -> LoginStep? {
        guard attempt.hasPrefix("a-"), text == "123456", let identity = Self.identity(of: "p-" + attempt.dropFirst(2)) else {
            return .refused(message: "The code is wrong.")
        }
        return .loggedIn(cookie: "p-" + identity.user, identity: identity)
    }

    func singleSignOn(user: String, proxy: String, from peer: WebPeer) async -> LoginStep? {
        Self.identity(of: "p-" + user).map { .loggedIn(cookie: "p-" + user, identity: $0) }
    }

    func identify(cookie: String, touch: Bool) async -> WebIdentity? {
        Self.identity(of: cookie)
    }

    func logout(cookie: String) async {}

    /// A first watch is answered with the count now; a later one as if deskd had gone, which ends the stream.
    func watch(cookie: String, after: UInt64?, signedOn: String?) async -> WatchAnswer? {
        guard let identity = Self.identity(of: cookie), signedOn == nil || signedOn == identity.user else { return WatchAnswer(generation: nil, loggedIn: false) }
        return after == nil ? WatchAnswer(generation: 1, loggedIn: true, account: identity.uid) : nil
    }

    func request(cookie: String, csrf: String, body: String, touch: Bool, signedOn: String?) async -> (status: Int, body: String)? {
        guard let identity = Self.identity(of: cookie), signedOn == nil || signedOn == identity.user else {
            return (401, #"{"error":{"code":"not-logged-in","message":"Log in first."}}"#)
        }
        guard csrf == identity.csrf else { return (403, #"{"error":{"code":"permission-denied","message":"The page is stale."}}"#) }
        return (200, #"{"ok":true}"#)
    }
}
