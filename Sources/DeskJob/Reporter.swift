import CDeskShims
import DeskCluster
import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc
import Synchronization

/// The report line to deskd on the login node: a TCP connection to the spec's ADDRESS:PORT,
/// authenticated both ways (`HopAuthenticator`, role `report`), then JobReport lines from here
/// and JobCommand lines from deskd, on a thread of its own.
///
/// The line is kept up for as long as the job runs: when it drops or cannot be made (deskd
/// restarting, the login node rebooting), it is made again with a backoff of 1 s growing to 5 s,
/// and every new connection starts with `ready` and the viewer count, so that a deskd that lost
/// track of the job adopts it again. Events that happen while it is down (`warned`) wait for it.
final class Reporter: Sendable {
    private struct State {
        var ready: JobReport?
        var viewers = 0
        /// Events to deliver in order, once each, on whichever connection is up.
        var outbox: [JobReport] = []
        /// The job is ending: deliver the outbox if the line is up, then stop.
        var closing = false
    }

    private let state = Mutex(State())
    private let host: String
    private let port: Int
    private let session: String
    private let key: [UInt8]
    private let events: EventQueue
    /// Wakes the reporter's poll when there is something to say.
    private let wakeRead: Int32, wakeWrite: Int32
    /// Written once, when the reporter has stopped.
    private let doneRead: Int32, doneWrite: Int32

    static let firstBackoff: Duration = .seconds(1)
    static let longestBackoff: Duration = .seconds(5)
    static let connectTime: Duration = .seconds(5)
    static let handshakeTime: Duration = .seconds(5)
    /// deskd not reading for this long is a dead line: made again.
    static let sendTime: Duration = .seconds(10)

    init(host: String, port: Int, session: String, key: [UInt8], events: EventQueue) {
        self.host = host
        self.port = port
        self.session = session
        self.key = key
        self.events = events
        var wake: [Int32] = [-1, -1], done: [Int32] = [-1, -1]
        if deskd_pipe_cloexec_nonblock(&wake) != 0 || deskd_pipe_cloexec_nonblock(&done) != 0 {
            StandardError.say("could not make a pipe: \(String(cString: strerror(errno))).")
            exit(1)
        }
        (wakeRead, wakeWrite, doneRead, doneWrite) = (wake[0], wake[1], done[0], done[1])
    }

    private var destination: String { "\(host):\(port)" }

    func start() -> Bool {
        DetachedThread.start(name: "deskd-job-report") { [self] in
            run()
            var byte: UInt8 = 1
            _ = write(doneWrite, &byte, 1)
        }
    }

    /// The desktop answers: said now if the line is up, and first on every new connection.
    func announce(_ ready: JobReport) {
        state.withLock { $0.ready = ready }
        wake()
    }

    func update(viewers: Int) {
        let changed = state.withLock { state in
            defer { state.viewers = viewers }
            return state.viewers != viewers
        }
        if changed { wake() }
    }

    func send(_ report: JobReport) {
        state.withLock { $0.outbox.append(report) }
        wake()
    }

    /// Delivers what is queued if the line is up (or comes up within `limit`), then closes it.
    /// Returns after `limit` at most, whatever deskd does.
    func close(within limit: Duration) {
        state.withLock { $0.closing = true }
        wake()
        var done = pollfd(fd: doneRead, events: Int16(POLLIN), revents: 0)
        _ = poll(&done, 1, Self.milliseconds(limit))
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private var isClosing: Bool { state.withLock { $0.closing } }

    // MARK: The reporter's thread

    private func run() {
        var backoff = Self.firstBackoff
        var quiet = false   // one complaint per outage on stderr, not one every few seconds
        while true {
            switch connect() {
            case .success(let fd):
                if quiet { StandardError.say("the report line to deskd at \(destination) is up again.") }
                quiet = false
                backoff = Self.firstBackoff
                let why = serve(fd)
                Glibc.close(fd)
                if isClosing { return }
                StandardError.say("the report line to deskd at \(destination) dropped: \(why); making it again.")
                quiet = true
            case .failure(let failure):
                if isClosing { return }
                if !quiet { StandardError.say("cannot reach deskd at \(destination): \(failure.reason); trying again every few seconds.") }
                quiet = true
            }
            guard pause(backoff) else { return }
            backoff = min(backoff * 2, Self.longestBackoff)
        }
    }

    /// Waits `duration` (wake-ups for news do not cut it short); false if the job began ending.
    private func pause(_ duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            if isClosing { return false }
            var wake = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
            if poll(&wake, 1, Self.milliseconds(deadline - .now)) > 0 { drainWake() }
        }
        return !isClosing
    }

    private func drainWake() {
        var sink = [UInt8](repeating: 0, count: 256)
        while sink.withUnsafeMutableBytes({ read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
    }

    private struct ConnectFailure: Error {
        let reason: String
    }

    /// A connection to deskd with the handshake done.
    private func connect() -> Result<Int32, ConnectFailure> {
        guard let address = InternetSocketAddress(host: host, port: port) else { return .failure(.init(reason: "not an IPv4 address")) }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failure(.init(reason: String(cString: strerror(errno)))) }
        if address.withSockaddr({ Glibc.connect(fd, $0, $1) }) != 0 {
            guard errno == EINPROGRESS else {
                let reason = String(cString: strerror(errno))
                Glibc.close(fd)
                return .failure(.init(reason: reason))
            }
            var writable = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard poll(&writable, 1, Self.milliseconds(Self.connectTime)) == 1,
                  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else {
                let reason = error != 0 ? String(cString: strerror(error)) : "no answer within \(Self.connectTime)"
                Glibc.close(fd)
                return .failure(.init(reason: reason))
            }
        }
        Self.keepAlive(fd)
        do {
            try HopAuthenticator.client(fd: fd, role: .report, session: session, key: key, deadline: .now + Self.handshakeTime)
        } catch {
            Glibc.close(fd)
            return .failure(.init(reason: "the hop handshake failed: \(error)"))
        }
        return .success(fd)
    }

    /// An idle line whose other end vanished (the login node lost power, a firewall forgot the
    /// connection) would otherwise look up for ever, and the job would never reconnect: TCP
    /// probes it after 30 s of silence and gives up after 3 missed answers, and unacknowledged
    /// data gives up after 60 s.
    private static func keepAlive(_ fd: Int32) {
        func set(_ level: Int32, _ option: Int32, _ value: Int32) {
            var value = value
            setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        set(SOL_SOCKET, SO_KEEPALIVE, 1)
        set(Int32(IPPROTO_TCP), TCP_KEEPIDLE, 30)
        set(Int32(IPPROTO_TCP), TCP_KEEPINTVL, 10)
        set(Int32(IPPROTO_TCP), TCP_KEEPCNT, 3)
        set(Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, 60_000)
    }

    /// Speaks on one connection until it drops (the reason is returned) or the job has ended
    /// and all is said.
    private func serve(_ fd: Int32) -> String {
        var readySent = false
        var viewersSent: Int?
        var inbox: [UInt8] = []
        while true {
            // What this connection has not heard yet: `ready` and the count first, then events.
            let (lines, events, closing) = state.withLock { state -> ([JobReport], [JobReport], Bool) in
                var lines: [JobReport] = []
                if !readySent, let ready = state.ready {
                    lines = [ready, JobReport(event: .viewers, viewers: state.viewers)]
                } else if readySent, viewersSent != state.viewers {
                    lines = [JobReport(event: .viewers, viewers: state.viewers)]
                }
                defer { state.outbox.removeAll() }
                return (lines, state.outbox, state.closing)
            }
            if !lines.isEmpty || !events.isEmpty {
                guard send(lines + events, on: fd) else {
                    // Undelivered events wait for the next connection.
                    state.withLock { $0.outbox.insert(contentsOf: events, at: 0) }
                    return "deskd did not take what was sent within \(Self.sendTime)"
                }
                if let last = lines.last {
                    readySent = true
                    viewersSent = last.viewers
                }
            }
            if closing {
                shutdown(fd, Int32(SHUT_WR))   // deskd reads the end of the line after the last report
                return "the job ended"
            }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0 && errno != EINTR { return String(cString: strerror(errno)) }
            if fds[1].revents != 0 { drainWake() }
            if fds[0].revents != 0 {
                if let why = receive(fd, into: &inbox) { return why }
            }
        }
    }

    /// Reads deskd's commands; the reason the connection is over, or nil.
    private func receive(_ fd: Int32, into inbox: inout [UInt8]) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { return errno == EAGAIN || errno == EINTR ? nil : String(cString: strerror(errno)) }
        if n == 0 { return "deskd closed it" }
        inbox += buffer[0..<n]
        while let newline = inbox.firstIndex(of: UInt8(ascii: "\n")) {
            let line = Array(inbox[..<newline])
            inbox.removeSubrange(...newline)
            guard line.count <= JobReport.maxLineBytes else { return "deskd sent a line over \(JobReport.maxLineBytes) bytes" }
            if line.isEmpty { continue }
            guard let command = try? JSONDecoder().decode(JobCommand.self, from: Data(line)) else {
                StandardError.say("ignored a line from deskd that is not a command this deskd-job knows: \(String(decoding: line.prefix(80), as: UTF8.self))")
                continue
            }
            events.post(.command(command.command))
        }
        return inbox.count > JobReport.maxLineBytes ? "deskd sent a line over \(JobReport.maxLineBytes) bytes" : nil
    }

    /// The reports as JSON lines, in one write where the kernel takes it.
    private func send(_ reports: [JobReport], on fd: Int32) -> Bool {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes: [UInt8] = []
        for report in reports {
            guard let line = try? encoder.encode(report) else { continue }
            bytes += line
            bytes.append(UInt8(ascii: "\n"))
        }
        let deadline = ContinuousClock.now + Self.sendTime
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            guard n < 0, errno == EAGAIN || errno == EINTR else { return false }
            var writable = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard ContinuousClock.now < deadline, poll(&writable, 1, Self.milliseconds(deadline - .now)) >= 0 else { return false }
        }
        return true
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return max(0, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }
}
