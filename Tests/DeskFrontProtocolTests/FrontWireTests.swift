import DeskCore
import DeskFrontProtocol
import Foundation
import Testing

/// What deskd and its web front say to each other, as the bytes both ends read back: every
/// message comes back as it went, anything else reads as nothing (never as another message),
/// and the counts deskd takes from a front are bounded before it adds them to its own.
@Suite struct FrontWireTests {
    static let requests: [FrontRequest] = [
        .exchange(call: 1, token: "t0ken", viewer: "uid:1001", signedOn: nil),
        .exchange(call: 2, token: "t", viewer: nil, signedOn: "alice"),
        .redeem(call: 3, cookie: "c00kie"),
        .relayEnded(relay: 4),
        .scrape(call: 5),
        .counts(GatewayCounts.Snapshot(connectionsOpen: 2, connectionsOpenedTotal: 9, relaysOpen: 1, relaysOpenedTotal: 3, exchangesAccepted: 4,
                                       refused: [.origin: 2, .unknownOwner: 1], cut: [.idle: 1])),
        .listenerFailed(listener: "gateway", reason: "Address already in use"),
        .login(call: 6, user: "alice", password: "pässwörd \"quoted\"\n", address: "192.0.2.7", client: "192.0.2.7"),
        .loginAnswer(call: 7, attempt: "a1", answer: "123456", address: "127.0.0.1", client: "uid:1001"),
        .singleSignOn(call: 8, user: "bob", proxy: "127.0.0.1", address: "198.51.100.2", client: "198.51.100.2"),
        .identify(call: 9, cookie: "c", touch: true),
        .watch(call: 10, cookie: "c", after: 77, signedOn: nil),
        .logout(call: 11, cookie: "c"),
        .request(call: 12, cookie: "c", csrf: "x", body: "{\"verb\":\"list\"}", touch: false, signedOn: nil),
    ]

    static let events: [FrontEvent] = [
        .setup(gateway: nil, portal: nil),
        .exchanged(call: 1, cookie: "c", viewOnly: true, forNamedViewers: false),
        .exchanged(call: 2, cookie: nil, viewOnly: false, forNamedViewers: true),
        .scraped(call: 3, text: "# HELP deskd_sessions\n"),
        .disconnect(relays: [1, 2, 3]),
        .loginStep(call: 4, step: .question(attempt: "a1", text: "Verification code:", echo: false, messages: ["Sent."])),
        .loginStep(call: 5, step: .loggedIn(cookie: "c", identity: WebIdentity(user: "alice", uid: 1001, isAdmin: false, csrf: "x", idleSeconds: 900, lifetimeSeconds: 43200))),
        .loginStep(call: 6, step: .refused(message: "Wrong user name or password.")),
        .identity(call: 7, identity: nil),
        .watched(call: 8, generation: 12, loggedIn: true, account: 1001),
        .answered(call: 9, status: 409, body: "{\"ok\":false}"),
    ]

    @Test(arguments: requests)
    func aRequestComesBackAsItWent(_ request: FrontRequest) throws {
        let bytes = FrontWire.encode(request)
        #expect(!bytes.isEmpty && bytes.count <= FrontWire.requestLimit)
        #expect(FrontWire.decode(FrontRequest.self, from: bytes) == request)
    }

    @Test(arguments: events)
    func anEventComesBackAsItWent(_ event: FrontEvent) throws {
        let bytes = FrontWire.encode(event)
        #expect(!bytes.isEmpty && bytes.count <= FrontWire.eventLimit)
        #expect(FrontWire.decode(FrontEvent.self, from: bytes) == event)
    }

    /// A record of one side is never read as a message of the other, and bytes that are not
    /// one of the messages are nothing at all.
    @Test func anythingElseIsNoMessage() {
        for request in Self.requests {
            #expect(FrontWire.decode(FrontEvent.self, from: FrontWire.encode(request)) == nil, "\(request) read as an event")
        }
        for bytes in [[], Array("{}".utf8), Array("{\"redeem\":{\"call\":1}}".utf8), Array("null".utf8), [0xFF, 0xFE],
                      Array("{\"relayEnded\":{\"relay\":-1}}".utf8)] as [[UInt8]] {
            #expect(FrontWire.decode(FrontRequest.self, from: bytes) == nil, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// What deskd takes from a front (a taken-over one could send anything): every count from 0
    /// to 2^40, and what a front that went leaves behind is its totals, nothing open.
    @Test func countsAreBoundedAndAClosedFrontKeepsItsTotalsOnly() {
        let counts = GatewayCounts.Snapshot(connectionsOpen: 5, connectionsOpenedTotal: 50, relaysOpen: 2, relaysOpenedTotal: 20, exchangesAccepted: 7,
                                            refused: [.cookie: 3], cut: [.notReading: 1])
        #expect(counts.isPlausible && GatewayCounts.Snapshot.zero.isPlausible)
        var negative = counts
        negative.relaysOpen = -1
        var huge = counts
        huge.refused[.frame] = (1 << 40) + 1
        var hugeCut = counts
        hugeCut.cut[.idle] = Int.max
        #expect(!negative.isPlausible && !huge.isPlausible && !hugeCut.isPlausible)
        let closed = counts.closed
        #expect(closed.connectionsOpen == 0 && closed.relaysOpen == 0)
        #expect(closed.connectionsOpenedTotal == 50 && closed.relaysOpenedTotal == 20 && closed.exchangesAccepted == 7 && closed.refused == [.cookie: 3])
    }

    /// The reasons are the words /metrics shows (`reason="…"`) and the JSON's keys: a renamed
    /// case would change what an admin's alert matches.
    @Test func theReasonsAreTheWordsMetricsShow() throws {
        #expect(GatewayCounts.Refusal.allCases.map(\.rawValue) == ["capacity", "address-capacity", "origin", "cookie", "token", "timeout", "malformed-request",
                                                                 "frame", "rfb", "desktop", "forged-user", "stream-capacity", "unknown-owner"])
        #expect(GatewayCounts.Cut.allCases.map(\.rawValue) == ["idle", "not-reading"])
        let json = String(decoding: FrontWire.encode(GatewayCounts.Snapshot(connectionsOpen: 0, connectionsOpenedTotal: 0, relaysOpen: 0, relaysOpenedTotal: 0,
                                                                            exchangesAccepted: 0, refused: [.addressCapacity: 1], cut: [:])), as: UTF8.self)
        #expect(json.contains("\"address-capacity\":1"), "\(json)")
    }
}
