import DeskCore
import Foundation
import Testing

@Suite struct ControlProtocolTests {
    @Test func roundTripsARequest() throws {
        let request = Request(command: .start, user: "alice", display: Display(5), geometry: "1280x800", depth: 24, desktop: "xterm")
        let bytes = Array(try JSONEncoder.desk.encode(request))
        #expect(try Request.decode(bytes) == request)
    }

    @Test(arguments: [
        ("", DeskError.Code.badRequest),
        ("{", .badRequest),
        ("[1,2]", .badRequest),
        ("{\"command\":\"list\"}", .unsupportedVersion),
        ("{\"version\":2,\"command\":\"list\"}", .unsupportedVersion),
        ("{\"version\":1}", .badRequest),
        ("{\"version\":1,\"command\":\"format-disk\"}", .badRequest),
        ("{\"version\":1,\"command\":\"start\",\"display\":\"three\"}", .badRequest),
    ])
    func refusesMalformedRequests(text: String, code: DeskError.Code) {
        let error = #expect(throws: DeskError.self) { try Request.decode(Array(text.utf8)) }
        #expect(error?.code == code)
    }

    @Test func refusesInvalidUTF8AndOversizedRequests() {
        #expect(throws: DeskError.self) { try Request.decode([0x7B, 0xFF, 0xFE, 0x7D]) }
        let huge = Array("{\"version\":1,\"command\":\"list\",\"user\":\"\(String(repeating: "a", count: ControlProtocol.maxRequestBytes))\"}".utf8)
        let error = #expect(throws: DeskError.self) { try Request.decode(huge) }
        #expect(error?.code == .requestTooLarge)
    }

    @Test func sessionJSONUsesTheDocumentedCamelCaseKeys() throws {
        let session = Session(
            id: "x", user: "alice", uid: 1001, gid: 1001, display: Display(3), endpoint: .tcp(port: 5903), pid: 42, pidStartTicks: 1,
            executable: "/usr/bin/Xtigervnc", state: .ready, startedAt: Date(timeIntervalSince1970: 0),
            desktop: "xterm", geometry: .default, depth: 24
        )
        let object = try JSONSerialization.jsonObject(with: JSONEncoder.desk.encode(session)) as? [String: Any]
        for key in ["user", "uid", "display", "rfbPort", "pid", "state", "startedAt", "desktop", "geometry", "clients", "idleSeconds"] {
            #expect(object?[key] != nil, "missing \(key)")
        }
        #expect(object?["display"] as? Int == 3)
        #expect(object?["rfbPort"] as? Int == 5903)
        #expect(object?["startedAt"] as? String == "1970-01-01T00:00:00Z")
        #expect(object?["password"] == nil)
    }

    @Test func errorRepliesCarryCodeAndSentence() throws {
        let response = Response(error: DeskError(.unknownUser, "there is no user named 'x'."))
        let decoded = try JSONDecoder.desk.decode(Response.self, from: JSONEncoder.desk.encode(response))
        #expect(decoded.deskError == DeskError(.unknownUser, "there is no user named 'x'."))
        #expect(!decoded.ok)
    }

    @Test func tableAlignsColumns() {
        let text = SessionTable.align([["A", "BBB", "C"], ["AAAA", "B", "CC"]])
        #expect(text == "A     BBB  C\nAAAA  B    CC")
        #expect(SessionTable.compactDuration(seconds: 7200) == "2h")
    }
}
