@testable import DeskDaemon
import DeskCore
import DeskFrontProtocol
import DeskLinux
@testable import DeskWeb
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

/// deskd's front socket with both its ends in this process: deskd's `FrontServer` on one side of
/// a SOCK_SEQPACKET pair, deskd-web's `DeskdLink` and `RemoteAuthority` on the other, speaking
/// the front protocol as the two processes do (the accept loop's SO_PEERCRED check aside, which
/// the end-to-end tests cover). No root: the desktops are a fake host's.
@Suite struct FrontSocketTests {
    /// What the front received of deskd's own events.
    final class Received: Sendable {
        let events = Mutex<[FrontEvent]>([])
    }

    /// Both ends, and deskd's own events as the front received them (setup, listeners, disconnects).
    final class Ends: Sendable {
        let daemon: SessionServiceTests.Daemon
        let fronts: FrontServer
        let link: DeskdLink
        let authority: RemoteAuthority
        let received = Received()

        init(_ configure: @escaping (inout DaemonConfiguration) -> Void = { _ in }) throws {
            daemon = try SessionServiceTests.Daemon { configuration in
                configuration.web.host = "127.0.0.1"
                configuration.web.port = 8080
                configure(&configuration)
            }
            fronts = FrontServer(service: daemon.service, logger: SessionServiceTests.Daemon.logger)
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { throw POSIXError(.EMFILE) }
            let deskdSide = RecordSocket(adopting: pair[0])
            let credentials = try #require(deskdSide.peer)
            #expect(fronts.admit(deskdSide, credentials: credentials))
            let link = DeskdLink(socket: RecordSocket(adopting: pair[1]))
            self.link = link
            authority = RemoteAuthority(link: link)
            let received = received
            // deskd-web reads its link on a thread of its own, as here.
            Thread.detachNewThread {
                link.readEvents { event, descriptors in
                    for fd in descriptors { close(fd) }
                    received.events.withLock { $0.append(event) }
                }
            }
        }

        func end() {
            link.end()
            daemon.remove()
        }

        func waitFor(_ condition: ([FrontEvent]) -> Bool) async -> Bool {
            for _ in 0..<500 {
                if received.events.withLock({ condition($0) }) { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return false
        }
    }

    @Test func theFrontIsToldItsSetupFirstWithThePortalsPage() async throws {
        let ends = try Ends()
        defer { ends.end() }
        #expect(await ends.waitFor { !$0.isEmpty })
        guard case .setup(let gateway?, let portal?)? = ends.received.events.withLock({ $0.first }) else {
            Issue.record("the first event was not a setup with a gateway and a portal: \(ends.received.events.withLock { $0 })")
            return
        }
        #expect(gateway.host == "127.0.0.1" && gateway.port == 8080)
        #expect(portal.html.contains("<html") && portal.script.contains("/api/request") && !portal.style.isEmpty)
    }

    /// A link's token is traded once for a cookie; the cookie is redeemed once, in one round
    /// trip, for the relay's grant together with its desktop (here refused: a fake host's desktop
    /// has no RFB socket, and deskd says why); the relay's end is counted.
    @Test func aLinkOpensInOneRedeemThatCarriesTheGrantAndTheDesktop() async throws {
        let ends = try Ends()
        defer { ends.end() }
        let session = try await ends.daemon.service.start(StartRequest(), caller: SessionServiceTests.alice)
        let link = try await ends.daemon.service.browserLink(session.display, viewOnly: true, ttlSeconds: 600, hostName: "desk", caller: SessionServiceTests.alice)
        let token = String(link.url.split(separator: "=").last ?? "")

        let (cookie, viewOnly) = try #require(await ends.authority.exchange(token: token))
        #expect(viewOnly)
        #expect(await ends.authority.exchange(token: token) == nil, "a token was traded twice")
        #expect(await ends.authority.exchange(token: "made-up") == nil)

        let redemption = try #require(await ends.authority.redeem(cookie: cookie))
        #expect(redemption.grant.sessionID == session.id && redemption.grant.viewOnly)
        guard case .failure(let refusal) = redemption.desktop else {
            Issue.record("a fake desktop was reached: \(redemption.desktop)")
            return
        }
        #expect(!refusal.reason.isEmpty)
        #expect(await ends.authority.redeem(cookie: cookie) == nil, "a cookie was redeemed twice")

        ends.authority.relayEnded(redemption.grant)
        var counted = 1
        for _ in 0..<200 where counted > 0 {
            counted = ends.daemon.service.environment.browsers.count(sessionID: session.id)
            if counted > 0 { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(counted == 0, "the ended relay still counts as a viewer")
    }

    @Test func thePortalAndTheMetricsAreAskedOverTheSameSocket() async throws {
        let ends = try Ends()
        defer { ends.end() }
        #expect(await ends.authority.identify(cookie: "made-up", touch: false) == nil)
        let answer = try #require(await ends.authority.request(cookie: "made-up", csrf: "x", body: #"{"command":"list"}"#, touch: false, signedOn: nil))
        #expect(answer.status == 401, "\(answer)")
        guard case .scraped(_, let text)? = await ends.link.answer({ .scrape(call: $0) }) else {
            Issue.record("no metrics text")
            return
        }
        #expect(text.contains("deskd_sessions"))
    }

    /// A front that sends what is not a request is cut off; deskd serves the next one.
    @Test func aFrontThatSpeaksNonsenseIsCutOffAndTheNextIsServed() async throws {
        let ends = try Ends()
        defer { ends.end() }
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let deskdSide = RecordSocket(adopting: pair[0])
        #expect(ends.fronts.admit(deskdSide, credentials: try #require(deskdSide.peer)))
        let rogue = RecordSocket(adopting: pair[1])
        try rogue.send(Array("not json".utf8))
        var buffer: [UInt8] = []
        var ended = false
        for _ in 0..<10 {
            // The setup first, then the end of the connection.
            guard (try? rogue.receive(limit: FrontWire.eventLimit, using: &buffer)) != nil else {
                ended = true
                break
            }
        }
        #expect(ended, "deskd kept a front that sent nonsense")
        #expect(await ends.authority.identify(cookie: "made-up", touch: false) == nil)
        #expect(await ends.authority.exchange(token: "made-up") == nil)
    }
}
