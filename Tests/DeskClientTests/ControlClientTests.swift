import DeskClient
import DeskCore
import DeskPOSIX
import Foundation
import Glibc
import Synchronization
import Testing

/// deskctl's side of the control socket against a stand-in deskd in this process (a Unix socket
/// and a thread): the request goes as one JSON line, a reply is read whole however it arrives,
/// and each way deskd can fail to answer gets its own sentence, with what to do.
@Suite struct ControlClientTests {
    /// A listener at a fresh path whose one connection `answer` handles: it gets what the client
    /// sent up to its newline, and writes back what it returns, in pieces of `chunk` bytes, then
    /// closes (nil: it holds the connection open, unanswered, until the test ends).
    final class StandIn: Sendable {
        let path: String
        let directory: String
        /// What the client sent, its newline left out.
        var received: [UInt8] { recorded.bytes.withLock { $0 } }
        private let recorded = Recorded()
        private let listener: Int32

        private final class Recorded: Sendable {
            let bytes = Mutex<[UInt8]>([])
        }

        init(chunk: Int = 1 << 20, answer: @escaping @Sendable ([UInt8]) -> [UInt8]?) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("deskctl-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            path = directory + "/deskd.sock"
            let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            self.listener = listener
            guard UnixSocketAddress(path)!.withSockaddr({ bind(listener, $0, $1) }) == 0, listen(listener, 1) == 0 else {
                throw POSIXError(.EADDRINUSE)
            }
            let recorded = self.recorded
            Thread {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { return }
                var byte: UInt8 = 0
                var line: [UInt8] = []
                while recv(fd, &byte, 1, 0) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
                recorded.bytes.withLock { $0 = line }
                guard let reply = answer(line) else {
                    usleep(3_000_000)
                    close(fd)
                    return
                }
                var offset = 0
                while offset < reply.count {
                    let end = min(reply.count, offset + chunk)
                    _ = reply[offset..<end].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    offset = end
                    usleep(1_000)
                }
                close(fd)
            }.start()
        }

        deinit {
            close(listener)
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// The sentence `body` failed with; "" if it did not fail.
    static func failure(_ body: () throws -> Response) -> String {
        do { _ = try body(); return "" } catch { return "\(error)" }
    }

    static func reply(_ response: Response) -> [UInt8] {
        Array((try! JSONEncoder.desk.encode(response))) + [UInt8(ascii: "\n")]
    }

    @Test func aRequestIsOneJSONLineAndAReplyIsReadWholeInPieces() throws {
        let sessions = (1...40).map { n in
            Session(id: String(repeating: "\(n % 10)", count: 32), user: "user\(n)", uid: UInt32(1000 + n), gid: 100, display: Display(n),
                    endpoint: .unixSocket(path: "/run/deskd/displays/\(n)/rfb.sock"), pid: Int32(100 + n), pidStartTicks: 1, executable: "/usr/bin/Xtigervnc",
                    state: .ready, startedAt: Date(timeIntervalSince1970: 1_800_000_000), desktop: "xterm", geometry: Geometry(width: 1280, height: 800), depth: 24)
        }
        let response = Response(sessions: sessions)
        let standIn = try StandIn(chunk: 100) { _ in Self.reply(response) }
        let answer = try ControlClient(socketPath: standIn.path).send(Request(command: .list))
        #expect(answer.ok && answer.sessions?.map(\.display) == sessions.map(\.display))
        let sent = try JSONDecoder.desk.decode(Request.self, from: Data(standIn.received))
        #expect(sent.command == .list)
    }

    @Test func noDeskdAtThePathSaysHowToStartOne() throws {
        let client = ControlClient(socketPath: "/nonexistent/deskd.sock")
        let said = Self.failure { try client.send(Request(command: .list)) }
        #expect(said == "cannot reach deskd at /nonexistent/deskd.sock (No such file or directory); start deskd (systemctl start deskd where it is installed as a service, "
                + "or scripts/demo in a source tree), or point deskctl at its socket with --socket or DESKD_SOCKET.")
    }

    /// An abstract name has no owner: anyone could bind it first and read the request.
    @Test func anAbstractNameIsNeverSentARequest() {
        let said = Self.failure { try ControlClient(socketPath: "@deskd").send(Request(command: .list)) }
        #expect(said.hasPrefix("'@deskd' is not a path to deskd's control socket"), "\(said)")
    }

    @Test func aConnectionClosedWithoutAReplySaysToLookAtTheLog() throws {
        let standIn = try StandIn { _ in [] }
        let said = Self.failure { try ControlClient(socketPath: standIn.path).send(Request(command: .list)) }
        #expect(said.contains("closed the connection without a reply; check its log"), "\(said)")
    }

    @Test func aReplyOfAnotherVersionSaysSo() throws {
        let standIn = try StandIn { _ in Array("{\"ok\":\"perhaps\"}\n".utf8) }
        let said = Self.failure { try ControlClient(socketPath: standIn.path).send(Request(command: .list)) }
        #expect(said.hasSuffix("sent a reply deskctl cannot read; are deskd and deskctl the same version?"), "\(said)")
    }

    @Test func aDeskdThatNeverAnswersIsGivenUpOnInTime() throws {
        let standIn = try StandIn { _ in nil }
        var client = ControlClient(socketPath: standIn.path)
        client.timeoutSeconds = 1
        let began = ContinuousClock.now
        let said = Self.failure { try client.send(Request(command: .list)) }
        #expect(said.contains("did not answer within 1 seconds"), "\(said)")
        #expect(ContinuousClock.now - began < .seconds(3))
    }

    @Test func theSocketIsTheOptionsThenTheEnvironmentsThenTheDefault() {
        #expect(ControlClient.socketPath(option: "/a.sock", environment: ["DESKD_SOCKET": "/b.sock"]) == "/a.sock")
        #expect(ControlClient.socketPath(option: nil, environment: ["DESKD_SOCKET": "/b.sock"]) == "/b.sock")
        #expect(ControlClient.socketPath(option: nil, environment: [:]) == ControlProtocol.defaultSocketPath)
    }
}
