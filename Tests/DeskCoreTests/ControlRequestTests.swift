import DeskCore
import Foundation
import Testing

/// Each verb's arguments as a type: what a client writes is what deskd reads back, and a wire
/// request that names the wrong things is refused with a sentence before any verb runs.
@Suite struct ControlRequestTests {
    static let requests: [ControlRequest] = [
        .ping, .status, .metrics, .desktops,
        .start(StartRequest()),
        .start(StartRequest(user: "alice", display: Display(7), geometry: try? Geometry(parsing: "1280x800"), depth: 16, desktop: "xterm", linkTTLSeconds: 600)),
        .list(ListRequest(all: true)), .show(ShowRequest(display: Display(3))),
        .kill(.display(Display(3))), .kill(.user("bob")), .kill(.all),
        .reap(ReapRequest(idleSeconds: 7200, user: "bob", dryRun: true)),
        .probe(ProbeRequest(display: Display(3), timeoutSeconds: 5)),
        .passwd(PasswdRequest(display: Display(3), viewOnly: true)),
        .url(UrlRequest(display: Display(3), action: .mint(viewOnly: true, ttlSeconds: 120))), .url(UrlRequest(display: Display(3), action: .revoke())),
        .url(UrlRequest(display: Display(3), action: .mint(viewOnly: true, ttlSeconds: 600, viewers: ["bob", "carol"]))),
        .url(UrlRequest(display: Display(3), action: .revoke(share: "AbCd-_012345"))), .url(UrlRequest(display: Display(3), action: .shares)),
        .history(HistoryRequest(user: "alice", since: Date(timeIntervalSince1970: 1_700_000_000))),
        .logs(LogsRequest(target: .display(Display(3)), lines: 20)), .logs(LogsRequest(target: .session(String(repeating: "ab", count: 16)))),
    ]

    @Test(arguments: requests)
    func whatAClientSendsIsWhatDeskdReads(_ request: ControlRequest) throws {
        let bytes = Array(try JSONEncoder.desk.encode(request.wire))
        #expect(try ControlRequest(Request.decode(bytes)) == request)
    }

    @Test func theWireStaysFlat() throws {
        let start = StartRequest(user: "alice", display: Display(5), linkTTLSeconds: 90).wire
        let object = try JSONSerialization.jsonObject(with: JSONEncoder.desk.encode(start)) as? [String: Any]
        #expect(object?["display"] as? Int == 5 && object?["web"] as? Bool == true && object?["ttlSeconds"] as? Int == 90)
        // The probe's timeout rides in idleSeconds, as version 1 always had it.
        let probe = try JSONSerialization.jsonObject(with: JSONEncoder.desk.encode(ProbeRequest(display: Display(2), timeoutSeconds: 4).wire)) as? [String: Any]
        #expect(probe?["idleSeconds"] as? Int == 4)
    }

    @Test(arguments: [
        ("{\"version\":1,\"command\":\"show\"}", "show needs a display, for example: deskctl show :3."),
        ("{\"version\":1,\"command\":\"kill\"}", "say which sessions to kill: a display (:N), --user NAME or --all."),
        ("{\"version\":1,\"command\":\"kill\",\"display\":0}", "display :0 is out of range; use :1 to :2000."),
        ("{\"version\":1,\"command\":\"start\",\"display\":2001}", "display :2001 is out of range; use :1 to :2000."),
        ("{\"version\":1,\"command\":\"reap\"}", "reap needs an idle time, for example: deskctl reap --idle 2h."),
        ("{\"version\":1,\"command\":\"logs\",\"session\":\"x\"}", "'x' is not a session id (32 hex digits, as in deskctl show or history); or name a display such as :3."),
    ])
    func aRequestWithTheWrongArgumentsIsRefusedWithASentence(text: String, sentence: String) throws {
        let wire = try Request.decode(Array(text.utf8))
        #expect(throws: DeskError.self) { try ControlRequest(wire) }
        do { _ = try ControlRequest(wire) } catch { #expect(error.message == sentence) }
    }

    @Test func outOfRangeWaitsAreBroughtIntoRange() throws {
        let probe = try ControlRequest(Request.decode(Array("{\"version\":1,\"command\":\"probe\",\"display\":1,\"idleSeconds\":999}".utf8)))
        #expect(probe == .probe(ProbeRequest(display: Display(1), timeoutSeconds: 30)))
        #expect(LogsRequest(target: .display(Display(1)), lines: 0).lines == 1)
    }
}
