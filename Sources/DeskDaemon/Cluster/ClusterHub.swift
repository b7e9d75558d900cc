import DeskCluster
import DeskCore
import DeskLinux
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// Where cluster desktops' jobs report back (`[slurm] listen`): a TCP listener on the login node
/// that compute nodes reach. A connection is heard only once it has proven it holds the key of a
/// session deskd is waiting on (`HopAuthenticator`, role `report`), so another user on any host
/// cannot pose as a job and point deskd's gateway at a port of theirs. After that, one JSON line
/// per event (`JobReport`), checked like any request, is handed to the session in order.
///
/// Blocking threads, not NIO: one per job's line, which is quiet for hours; the handshake is the
/// same blocking code deskd-job runs.
final class ClusterHub: Sendable {
    private struct State {
        /// The keys of the sessions whose jobs may report.
        var keys: [String: [UInt8]] = [:]
        /// Each session's live report line (the newest: a job that reconnects replaces it).
        var lines: [String: Int32] = [:]
        /// Connections still in their handshake, which a flood may not grow without bound; and
        /// per peer address, so that one host cannot hold every slot and keep jobs from reporting.
        var handshaking = 0
        var handshakingFrom: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let logger: Logger
    static let maxHandshakes = 64
    static let maxHandshakesPerAddress = 8
    static let handshakeTimeout: Duration = .seconds(5)

    init(logger: Logger) {
        self.logger = logger
    }

    func register(session: String, key: [UInt8]) {
        state.withLock { $0.keys[session] = key }
    }

    /// The session ended: its key is no longer accepted and its line is closed.
    func forget(session: String) {
        let line = state.withLock { state -> Int32? in
            state.keys[session] = nil
            return state.lines.removeValue(forKey: session)
        }
        if let line { shutdown(line, Int32(SHUT_RDWR)) }
    }

    var isEmpty: Bool { state.withLock { $0.keys.isEmpty } }

    /// Tells the session's job something; false if it has no line now.
    @discardableResult
    func send(_ command: JobCommand, to session: String) -> Bool {
        guard let data = try? JSONEncoder().encode(command) else { return false }
        let bytes = Array(data) + [UInt8(ascii: "\n")]
        return state.withLock { state -> Bool in
            guard let line = state.lines[session] else { return false }
            return bytes.withUnsafeBytes { Glibc.send(line, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) } == bytes.count
        }
    }

    // MARK: Listening

    /// Binds `address` and serves it on a thread of its own until deskd exits. `deliver` is
    /// called for each report, one at a time per line, and awaited before the next is read.
    /// `deliver` gets the session's id, the report and the address the report came from.
    func listen(on address: ListenAddress, deliver: @escaping @Sendable (String, JobReport, String) async -> Void) throws(OSError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OSError("socket") }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        guard let sockaddr = InternetSocketAddress(host: address.host, port: address.port),
              sockaddr.withSockaddr({ bind(fd, $0, $1) }) == 0, Glibc.listen(fd, 128) == 0 else {
            let error = OSError("bind", path: "\(address.host):\(address.port)")
            close(fd)
            throw error
        }
        DetachedThread.start(name: "deskd-cluster") { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    // Out of descriptors, say: wait rather than spin.
                    usleep(100_000)
                    continue
                }
                // deskd starts no program that could inherit it (deskd-session closes what it does not need).
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                let peer = Self.peerHost(connection)
                let admitted = state.withLock { state -> Bool in
                    guard state.handshaking < Self.maxHandshakes, state.handshakingFrom[peer, default: 0] < Self.maxHandshakesPerAddress else { return false }
                    state.handshaking += 1
                    state.handshakingFrom[peer, default: 0] += 1
                    return true
                }
                guard admitted, DetachedThread.start(name: "deskd-report", { [self] in serve(connection, peer: peer, deliver: deliver) }) else {
                    if admitted { handshakeEnded(peer) }
                    close(connection)
                    continue
                }
            }
        }
    }

    private func handshakeEnded(_ peer: String) {
        state.withLock { state in
            state.handshaking -= 1
            state.handshakingFrom[peer, default: 1] -= 1
            if state.handshakingFrom[peer] == 0 { state.handshakingFrom[peer] = nil }
        }
    }

    private func serve(_ fd: Int32, peer: String, deliver: @escaping @Sendable (String, JobReport, String) async -> Void) {
        defer { close(fd) }
        let hello: HopHandshake.Hello
        do {
            hello = try HopAuthenticator.server(fd: fd, deadline: .now + Self.handshakeTimeout) { hello in
                hello.role == .report ? state.withLock { $0.keys[hello.session] } : nil
            }
        } catch {
            handshakeEnded(peer)
            logger.notice("a connection to the cluster listener was refused", metadata: ["peer": "\(peer)", "reason": "\(error)"])
            return
        }
        handshakeEnded(peer)
        let replaced = state.withLock { state -> Int32? in
            defer { state.lines[hello.session] = fd }
            return state.lines[hello.session]
        }
        if let replaced { shutdown(replaced, Int32(SHUT_RDWR)) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
        logger.debug("a desktop's job reported in", metadata: ["session.id": "\(hello.session)", "peer": "\(peer)"])
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        reading: while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            buffer += chunk[..<n]
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                guard let report = try? JSONDecoder().decode(JobReport.self, from: Data(line)), report.isWellFormed else {
                    logger.warning("a desktop's job sent a report deskd does not read; closing its line", metadata: ["session.id": "\(hello.session)", "peer": "\(peer)"])
                    break reading
                }
                Self.wait { await deliver(hello.session, report, peer) }
            }
            if buffer.count > JobReport.maxLineBytes {
                logger.warning("a desktop's job sent an overlong report line; closing it", metadata: ["session.id": "\(hello.session)"])
                break
            }
        }
        state.withLock { state in
            if state.lines[hello.session] == fd { state.lines[hello.session] = nil }
        }
    }

    /// Runs `work` to its end from this blocking thread, so reports reach the session in order.
    /// The one way from a thread outside Swift concurrency into an actor: a task, which this
    /// thread (never one of the cooperative pool's) waits for.
    private static func wait(_ work: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await work()
            done.signal()
        }
        done.wait()
    }

    /// The peer's IPv4 address as text ("unknown" if it has none).
    private static func peerHost(_ fd: Int32) -> String {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
        }
        guard named else { return "unknown" }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
