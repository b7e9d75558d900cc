@testable import DeskCore
import FoundationEssentials
import Testing

/// deskd's replies with their sessions written and read by hand (ResponseWire) must be the
/// replies Foundation's coders make and read: the same sessions, field for field.
struct ResponseWireTests {
    static func session(_ n: Int, user: String = "alice") -> Session {
        var session = Session(id: String(repeating: "ab", count: 16), user: user, uid: 1000 + UInt32(n), gid: 100, display: Display(n),
                              endpoint: n.isMultiple(of: 2) ? .tcp(port: 5900 + n) : .unixSocket(path: "/run/deskd/displays/\(n)/rfb.sock"),
                              pid: Int32(4000 + n), pidStartTicks: UInt64.max - UInt64(n), executable: "/usr/bin/Xtigervnc",
                              desktopPid: n.isMultiple(of: 3) ? nil : Int32(5000 + n), state: SessionState.allCases[n % SessionState.allCases.count],
                              startedAt: Date(timeIntervalSince1970: 1_795_000_000 + Double(n)), desktop: "xfce", geometry: Geometry(width: 640, height: 480),
                              depth: 24, clients: n % 3, lastClientAt: n.isMultiple(of: 2) ? Date(timeIntervalSince1970: 1_795_000_500) : nil,
                              idleSeconds: n * 7, password: n.isMultiple(of: 5) ? "pw\(n)" : nil)
        if n.isMultiple(of: 4) { session.viewOnlyPassword = "view" }
        if n.isMultiple(of: 6) {
            var job = SlurmJob(jobId: "12_\(n)", node: "node1", partition: nil, state: "RUNNING", reason: nil, timeLimit: "1-00:00:00",
                               endsAt: Date(timeIntervalSince1970: 1_795_086_400), expectedStart: nil)
            job.extendedSeconds = 1800
            session.slurm = job
        }
        if n.isMultiple(of: 7) { session.displayServer = .wayland }
        return session
    }

    static let awkwardNames = ["bob \"the\" \\ builder", "tab\there", "nul\u{0}byte", "é😀\u{1F}", "line\nbreak\r", "/slash/"]

    @Test func aListReadsAsFoundationReadsIt() throws {
        var extremes = Self.session(41)
        (extremes.idleSeconds, extremes.clients, extremes.pid, extremes.depth) = (Int.min, Int.max, Int32.min, 0)
        var response = Response(sessions: (1...40).map { Self.session($0, user: Self.awkwardNames[$0 % Self.awkwardNames.count]) } + [extremes])
        response.foreign = [ForeignDisplay(display: Display(9), reason: "held by someone else", pid: 77)]
        let fast = try ResponseWire.encode(response)
        let foundation = try JSONEncoder.deskWire.encode(response)
        // Read by hand, whoever wrote it; read by Foundation, what the hand wrote.
        let expected = try JSONDecoder.desk.decode(Response.self, from: foundation)
        #expect(try ResponseWire.decode(fast) == expected)
        #expect(try ResponseWire.decode(Array(foundation)) == expected)
        #expect(try JSONDecoder.desk.decode(Response.self, from: Data(fast)) == expected)
        #expect(expected.sessions?.map(\.user) == (1...40).map { Self.awkwardNames[$0 % Self.awkwardNames.count] } + ["alice"])
        #expect(expected.sessions?.last?.idleSeconds == Int.min && expected.sessions?.last?.pid == Int32.min)
    }

    @Test func repliesWithoutSessionsAreFoundationsOwn() throws {
        for response in [Response(error: DeskError(.noSuchSession, "there is no deskd session on display :9")), Response(daemonVersion: "1.0"),
                         Response(sessions: [])] {
            let bytes = try ResponseWire.encode(response)
            #expect(try ResponseWire.decode(bytes) == JSONDecoder.desk.decode(Response.self, from: Data(bytes)))
        }
    }

    /// A later deskd's fields are passed over, as Foundation passes over them.
    @Test func unknownFieldsArePassedOver() throws {
        let text = #"{"ok":true,"version":1,"later":{"x":[1,-2.5e-3,"\u00e9",null,false]},"sessions":[{"id":"a","user":"u","uid":1,"gid":1,"display":2,"pid":3,"pidStartTicks":4,"executable":"x","state":"ready","startedAt":"2026-11-28T07:31:02Z","desktop":"d","geometry":"640x480","depth":24,"clients":0,"idleSeconds":5,"rfbPort":null,"newer":{"deep":[[[]]]}}]}"#
        let fast = try ResponseWire.decode(Array(text.utf8))
        #expect(fast == (try JSONDecoder.desk.decode(Response.self, from: Data(text.utf8))))
        #expect(fast.sessions?.first?.idleSeconds == 5 && fast.sessions?.first?.rfbPort == nil)
    }

    @Test(arguments: [
        #"{"ok":true,"version":1,"sessions":[],"sessions":[]}"#,                                    // twice
        #"{"ok":true,"version":1,"sessions":[{"id":"a","id":"b"}]}"#,                               // a key twice
        #"{"ok":true,"version":1,"sessions":[{"id":"\ud800"}]}"#,                                   // a lone surrogate
        #"{"ok":true,"version":1,"sessions":[{"uid":01}]}"#,                                        // a leading zero
        #"{"ok":true,"version":1,"sessions":[{"uid":1.5}]}"#,                                       // not an integer
        #"{"ok":true,"version":1,"sessions":[{"uid":4294967296}]}"#,                                // past UInt32
        #"{"ok":true,"version":1,"sessions":[{"id":"a"}]}"#,                                        // fields missing
        #"{"ok":true,"version":1,"sessions":[{"id":"a\u0001"}]"#,                                   // not closed
        #"{"ok":true,"version":1,"sessions":[]} x"#,                                                // more after it
        "{\"ok\":true,\"version\":1,\"sessions\":[{\"id\":\"a\tb\"}]}",                             // a raw control byte
        #"{"ok":true,"version":1,"x":"#,
    ])
    func malformedRepliesAreRefused(_ text: String) {
        #expect(throws: (any Error).self) { try ResponseWire.decode(Array(text.utf8)) }
    }

    @Test func nestingHasABound() {
        let deep = #"{"ok":true,"version":1,"x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + #","sessions":[]}"#
        #expect(throws: (any Error).self) { try ResponseWire.decode(Array(deep.utf8)) }
    }
}
