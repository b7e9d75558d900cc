@testable import DeskCore
import FoundationEssentials
import Testing

/// Session's hand-written coding (Session+Codable.swift) is the synthesized one, faster.
@Suite struct SessionCodingTests {
    /// What the compiler would have synthesized for Session, field for field.
    struct Synthesized: Codable {
        var id: String, user: String, uid: UInt32, gid: UInt32, display: Display, rfbPort: Int?, rfbSocket: String?
        var pid: Int32, pidStartTicks: UInt64, executable: String, desktopPid: Int32?, state: SessionState, startedAt: Date
        var desktop: String, geometry: Geometry, depth: Int, clients: Int, lastClientAt: Date?, idleSeconds: Int
        var password: String?, viewOnlyPassword: String?

        init(_ s: Session) {
            (id, user, uid, gid, display, rfbPort, rfbSocket) = (s.id, s.user, s.uid, s.gid, s.display, s.rfbPort, s.rfbSocket)
            (pid, pidStartTicks, executable, desktopPid, state, startedAt) = (s.pid, s.pidStartTicks, s.executable, s.desktopPid, s.state, s.startedAt)
            (desktop, geometry, depth, clients, lastClientAt, idleSeconds) = (s.desktop, s.geometry, s.depth, s.clients, s.lastClientAt, s.idleSeconds)
            (password, viewOnlyPassword) = (s.password, s.viewOnlyPassword)
        }
    }

    static let sessions: [Session] = {
        var full = Session(id: "0123456789abcdef0123456789abcdef", user: "ana", uid: 1001, gid: 1002, display: Display(123),
                           endpoint: .tcp(port: 6023), pid: 12345, pidStartTicks: 987_654_321, executable: "/usr/bin/Xtigervnc",
                           desktopPid: 12346, state: .unresponsive, startedAt: Date(timeIntervalSince1970: 1_790_000_000), desktop: "xfce",
                           geometry: Geometry(width: 1920, height: 1080), depth: 24, clients: 2,
                           lastClientAt: Date(timeIntervalSince1970: 1_790_000_100), idleSeconds: 42, password: "s3cret/\"x\"")
        full.viewOnlyPassword = "view"
        let bare = Session(id: "fedcba9876543210fedcba9876543210", user: "bob", uid: 1003, gid: 1003, display: Display(1),
                           endpoint: .unixSocket(path: "/run/deskd/by-id/fedcba/rfb.sock"), pid: 7, pidStartTicks: 0,
                           executable: "/usr/bin/Xtigervnc", state: .starting, startedAt: Date(timeIntervalSince1970: 0), desktop: "auto",
                           geometry: Geometry(width: 640, height: 480), depth: 16)
        return [full, bare]
    }()

    @Test func theWrittenOutFormIsTheSynthesizedOne() throws {
        for session in Self.sessions {
            let written = try JSONEncoder.desk.encode(session)
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: try JSONEncoder.desk.encode(Synthesized(session)), as: UTF8.self))
            #expect(try JSONDecoder.desk.decode(Session.self, from: written) == session)
            #expect(try JSONDecoder.desk.decode(Session.self, from: JSONEncoder.deskWire.encode(session)) == session)
        }
    }

    /// A field added to Session and not to its coding keys would be silently left out.
    @Test func everyFieldHasACodingKey() {
        let fields = Mirror(reflecting: Self.sessions[0]).children.compactMap(\.label)
        #expect(fields == Session.CodingKeys.allCases.map(\.rawValue))
    }

    @Test func aStateOrGeometryThatIsNotOneIsADecodingError() throws {
        let text = String(decoding: try JSONEncoder.desk.encode(Self.sessions[1]), as: UTF8.self)
        for (from, to) in [("\"starting\"", "\"asleep\""), ("\"640x480\"", "\"wide\"")] {
            #expect(throws: DecodingError.self) { try JSONDecoder.desk.decode(Session.self, from: Data(text.replacingOccurrences(of: from, with: to).utf8)) }
        }
    }
}
