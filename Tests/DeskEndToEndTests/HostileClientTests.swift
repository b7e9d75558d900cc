import DeskPOSIX
import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// Clients that send garbage, too much, half a message or nothing at all: each gets an answer
/// or the deadline, and none holds up anyone else.
extension EndToEnd {
@Suite struct HostileClientTests {
    /// A control connection driven byte by byte, as no well-behaved client would.
    final class RawConnection {
        let fd: Int32

        /// Connects to `socket`; with `uid`, as that user (SO_PEERCRED records the effective uid at connect).
        init(_ socket: String, as uid: uid_t? = nil) throws {
            fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let address = UnixSocketAddress(socket)!
            if let uid { precondition(seteuid(uid) == 0) }
            let connected = address.withSockaddr { connect(fd, $0, $1) }
            if uid != nil { precondition(seteuid(0) == 0) }
            guard connected == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
        }

        deinit { close(fd) }

        /// Sends what it can; the daemon may close early (request too large), which is fine.
        func send(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                offset += n
            }
        }

        /// The daemon's reply line, or nil if none came within `milliseconds`.
        func reply(within milliseconds: Int32 = 10_000) -> Response? {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !bytes.contains(UInt8(ascii: "\n")) {
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, milliseconds) == 1 else { return nil }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { break }
                bytes += chunk[0..<n]
            }
            return try? JSONDecoder.desk.decode(Response.self, from: Data(bytes.prefix { $0 != UInt8(ascii: "\n") }))
        }

        /// Nothing to read and not closed: the daemon is still waiting on this client.
        var isOpenAndUnanswered: Bool {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return poll(&pfd, 1, 0) == 0
        }
    }

    static let malformed: [[UInt8]] = [
        [0xFF, 0xFE, 0xC3, 0x28, 0x0A],                                                   // invalid UTF-8
        Array(String(repeating: "[", count: 10_000).utf8) + [0x0A],                      // deeply nested
        Array(String(repeating: "{\"a\":", count: 3_000).utf8) + [0x0A],
        Array("{}\n".utf8),
        Array("not json at all\n".utf8),
        Array("{\"version\":1,\"command\":\"explode\"}\n".utf8),
        Array("{\"version\":2,\"command\":\"list\"}\n".utf8),
        Array("{\"version\":1,\"command\":\"start\",\"display\":\"three\"}\n".utf8),
        Array("{\"version\":1,\"command\":\"kill\"}\n".utf8),
        Array("{\"version\":1,\"command\":\"show\",\"display\":99999999999999999999}\n".utf8),
        [0, 0, 0, 0x0A],
        [UInt8](repeating: UInt8(ascii: "a"), count: 20_000),                             // too large, no newline
    ]

    static func residentKiB(_ pid: pid_t) -> Int {
        let status = ProcFS.readText("/proc/\(pid)/status") ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func floodsOfGarbageAndSilentClientsNeverStallTheDaemon() throws {
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown() }
        let pid = try #require(daemon.process?.processIdentifier)

        // A client that connects and says nothing, one that sends half a request, one that sends a megabyte.
        let silent = try RawConnection(daemon.socket)
        let half = try RawConnection(daemon.socket)
        half.send(Array("{\"version\":1,\"comm".utf8))
        let megabyte = try RawConnection(daemon.socket)
        var generator = SystemRandomNumberGenerator()
        megabyte.send((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) | 0x80 })   // no newline in it
        #expect(megabyte.reply()?.error?.code == .requestTooLarge)

        // Warm up, then 10,000 malformed requests from four clients at once.
        for index in 0..<200 {
            let connection = try RawConnection(daemon.socket)
            connection.send(Self.malformed[index % Self.malformed.count])
            _ = connection.reply()
        }
        let before = Self.residentKiB(pid)
        let answered = Counter()
        let socket = daemon.socket
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for index in 0..<2_500 {
                guard let connection = try? RawConnection(socket) else { continue }
                connection.send(Self.malformed[(worker + index) % Self.malformed.count])
                if let reply = connection.reply(), !reply.ok, reply.error != nil { answered.add() }
            }
        }
        let after = Self.residentKiB(pid)
        print("deskd resident memory around 10,000 malformed requests: \(before) KiB before, \(after) KiB after")
        #expect(answered.value == 10_000, "every malformed request gets an error reply")

        // A valid request is served while a silent client holds its connection.
        let silentNow = try RawConnection(daemon.socket)
        let pong = try daemon.client.send(Request(command: .ping))
        #expect(pong.ok && pong.daemonVersion == DeskVersion.current)
        let silentStillWaiting = silentNow.isOpenAndUnanswered
        #expect(silentStillWaiting)
        #expect(daemon.isRunning)
        // Memory stays flat: the flood leaves no more than a few MiB behind.
        #expect(after - before < 16 * 1024, "deskd grew from \(before) KiB to \(after) KiB")

        // The silent and the half-sent clients are cut off by the read deadline, with a sentence.
        let silentReply = try #require(silent.reply())
        #expect(silentReply.error?.code == .badRequest && silentReply.error?.message.contains("no complete request") == true)
        #expect(half.reply()?.error?.code == .badRequest)
    }

    @Test func oneUserCannotHoldEveryConnection() throws {
        let lena = try TestUsers.ensure("deskt-lena")
        let mike = try TestUsers.ensure("deskt-mike")
        let daemon = try DaemonUnderTest(config: "[daemon]\nmax_connections_per_user = 3\n")
        defer { daemon.shutDown() }

        var held = try (0..<3).map { _ in try RawConnection(daemon.socket, as: lena.uid) }
        // The next one from Lena is turned away at once, naming the limit.
        let extra = try RawConnection(daemon.socket, as: lena.uid)
        let refusal = try #require(extra.reply())
        #expect(refusal.error?.code == .limitReached)
        #expect(refusal.error?.message.contains("daemon.max_connections_per_user is 3") == true)
        let stillWaiting = held.allSatisfy(\.isOpenAndUnanswered)
        #expect(stillWaiting)
        // Others are served meanwhile: another user, and root.
        #expect(try daemon.deskctl(["list"], as: mike.name).status == 0)
        #expect(try daemon.client.send(Request(command: .ping)).ok)
        // Once Lena lets go, she is served again.
        held.removeAll()
        #expect(eventually { (try? daemon.deskctl(["list"], as: lena.name).status) == 0 })
    }
}
}

/// A thread-safe count for the flood's workers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
