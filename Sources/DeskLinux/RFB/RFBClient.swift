import CDeskShims
import DeskPOSIX
import DeskCore
import Glibc

/// deskd's own RFB client: enough of RFC 6143 to know that a session's Xvnc answers (readiness),
/// and to log in with the session's password and get a framebuffer update back (`probe`).
///
/// It trusts nothing that merely answers. Before a byte of RFB is read, the kernel must say the
/// server is the session's Xvnc: for a Unix socket, the listener's pid from SO_PEERCRED; for
/// TCP, every listener on the port must be one of Xvnc's own sockets (sock_diag inode against
/// /proc/PID/fd). A socket path is opened O_PATH|O_NOFOLLOW and connected through
/// /proc/self/fd, so a symlink the owner planted in their session directory is never followed.
public final class RFBClient {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Nothing listens (yet), or the connection was refused.
        case refused
        /// A connection, but no complete answer before the deadline.
        case silent
        /// Something other than the session's Xvnc holds the endpoint: what, as a sentence's end.
        case impostor(String)
        /// The server refused the password, or spoke something that is not RFB.
        case rejected(String)

        public var description: String {
            switch self {
            case .refused: "nothing accepts connections there"
            case .silent: "the server did not answer in time"
            case .impostor(let what): what
            case .rejected(let why): why
            }
        }
    }

    /// What a VNC server said about itself.
    public struct Greeting: Sendable, Equatable {
        /// "RFB 003.008"
        public let version: String
        public let securityTypes: [UInt8]
    }

    public struct ServerInit: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public let bitsPerPixel: Int
        public let desktopName: String
    }

    /// VNC security type numbers (RFC 6143 and TigerVNC's VeNCrypt).
    public static let securityNone: UInt8 = 1
    public static let vncAuthentication: UInt8 = 2
    public static let veNCrypt: UInt8 = 19

    private let fd: Int32
    private let deadline: ContinuousClock.Instant

    private init(fd: Int32, deadline: ContinuousClock.Instant) {
        self.fd = fd
        self.deadline = deadline
    }

    /// Speaks RFB over `fd`, a socket already connected to a server its caller vouches for (one
    /// end of a socket pair, in the fuzzer): no peer is checked, so deskd itself never uses it.
    /// The client closes the socket when it goes.
    package convenience init(connectedSocket fd: Int32, timeout: Duration) {
        self.init(fd: fd, deadline: ContinuousClock.now + timeout)
    }

    deinit { close(fd) }

    // MARK: Connecting to the session's own Xvnc, and nothing else

    /// Connects to `endpoint` (TCP on `host`) and checks that `xvnc` serves it, if given.
    public static func connect(_ endpoint: RFBEndpoint, host: String = "127.0.0.1", xvnc: pid_t?,
                               timeout: Duration) throws(Failure) -> RFBClient {
        let deadline = ContinuousClock.now + timeout
        switch endpoint {
        case .unixSocket(let path):
            let fd = try connectUnix(path, deadline: deadline)
            let client = RFBClient(fd: fd, deadline: deadline)
            if let xvnc {
                let peer = try? PeerCredentials(socket: fd)
                guard let peer, peer.pid == xvnc else {
                    throw .impostor("\(path) is served by " + (peer.map { "pid \($0.pid) (uid \($0.uid))" } ?? "an unknown process") + ", not by the session's VNC server (pid \(xvnc))")
                }
            }
            return client
        case .tcp(let port):
            if let xvnc { try checkListeners(port: port, xvnc: xvnc) }
            return RFBClient(fd: try connectTCP(host: host, port: port, deadline: deadline), deadline: deadline)
        }
    }

    /// Every listener on `port` must be one of `xvnc`'s sockets; the first that is not is named.
    public static func checkListeners(port: Int, xvnc: pid_t) throws(Failure) {
        let listeners = ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen]).filter { $0.localPort == port }
        guard !listeners.isEmpty else { throw .refused }
        let own = ProcFS.socketInodes(of: xvnc)
        if let foreign = listeners.first(where: { !own.contains($0.inode) }) {
            let who = UserAccount.withUID(foreign.uid).map { "uid \(foreign.uid) (\($0.name))" } ?? "uid \(foreign.uid)"
            throw .impostor("TCP port \(port) is held by a socket of \(who), not by the session's VNC server (pid \(xvnc))")
        }
    }

    private static func connectUnix(_ path: String, deadline: ContinuousClock.Instant) throws(Failure) -> Int32 {
        let handle = deskd_open_path_nofollow(path)
        guard handle >= 0 else {
            if errno == ELOOP { throw .impostor("\(path) is a symlink") }
            throw .refused
        }
        defer { close(handle) }
        // With O_PATH, O_NOFOLLOW opens a symlink itself rather than failing: say what it is.
        var info = stat()
        guard fstat(handle, &info) == 0 else { throw .refused }
        guard info.st_mode & S_IFMT != S_IFLNK else { throw .impostor("\(path) is a symlink") }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw .impostor("\(path) is not a socket") }
        // The magic link names the very inode just opened, whatever the path now holds.
        guard let address = UnixSocketAddress("/proc/self/fd/\(handle)") else { throw .refused }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .refused }
        // A Unix connect completes at once or fails (EAGAIN: the backlog is full).
        guard address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw .refused
        }
        return fd
    }

    private static func connectTCP(host: String, port: Int, deadline: ContinuousClock.Instant) throws(Failure) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .refused }
        guard let address = InternetSocketAddress(host: host, port: port) else { close(fd); throw .refused }
        let connected = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if connected != 0 {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard errno == EINPROGRESS, wait(fd, for: Int16(POLLOUT), until: deadline),
                  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0
            else { close(fd); throw .refused }
        }
        return fd
    }

    /// Runs `body` on the connected socket before a byte of RFB, within the connection's
    /// deadline: the cluster hop's handshake, which a compute node's relay asks for first.
    public func beforeRFB(_ body: (_ fd: Int32, _ deadline: ContinuousClock.Instant) throws(Failure) -> Void) throws(Failure) {
        try body(fd, deadline)
    }

    // MARK: The protocol

    /// The server's ProtocolVersion, our echo of it, and its security types.
    public func greet() throws(Failure) -> Greeting {
        let version = try read(12)
        guard version.starts(with: Array("RFB ".utf8)), version.last == 0x0A else { throw .rejected("the server does not speak RFB") }
        // Answer with the version the server offered (Xvnc speaks 3.8; 3.3 has no type list).
        try write(version)
        let count = try read(1)[0]
        guard count > 0 else { throw .rejected("the server offers no security type") }
        return Greeting(version: String(decoding: version.dropLast(), as: UTF8.self), securityTypes: try read(Int(count)))
    }

    /// Chooses VNC authentication with `password` (or None, if that is all the server wants).
    public func authenticate(_ greeting: Greeting, password: String?) throws(Failure) {
        if let password, greeting.securityTypes.contains(Self.vncAuthentication) {
            try write([Self.vncAuthentication])
            let challenge = try read(VNCAuthentication.challengeLength)
            try write(VNCAuthentication.response(challenge: challenge, password: password))
        } else if greeting.securityTypes.contains(Self.securityNone) {
            try write([Self.securityNone])
        } else {
            throw .rejected("the server offers no security type deskd can use")
        }
        guard try readUInt32() == 0 else { throw .rejected("the server refused the password") }
    }

    /// ClientInit (shared, so no viewer is disconnected) and the server's ServerInit.
    public func initialise() throws(Failure) -> ServerInit {
        try write([1])
        let header = try read(24)
        let width = Int(header[0]) << 8 | Int(header[1])
        let height = Int(header[2]) << 8 | Int(header[3])
        let bitsPerPixel = Int(header[4])
        let nameLength = Int(header[20]) << 24 | Int(header[21]) << 16 | Int(header[22]) << 8 | Int(header[23])
        guard nameLength <= 4096, [8, 16, 32].contains(bitsPerPixel) else { throw .rejected("the server's ServerInit is malformed") }
        let name = try read(nameLength)
        return ServerInit(width: width, height: height, bitsPerPixel: bitsPerPixel, desktopName: String(decoding: name, as: UTF8.self))
    }

    /// Asks for one pixel of the screen in raw encoding and reads the update that answers.
    public func refreshOnePixel(_ server: ServerInit) throws(Failure) {
        // SetEncodings: raw only, so the reply's size is known from its rectangles.
        try write([2, 0, 0, 1, 0, 0, 0, 0])
        try write([3, 0, 0, 0, 0, 0, 0, 1, 0, 1])
        while true {
            switch try read(1)[0] {
            case 0:   // FramebufferUpdate
                let count = try read(3)
                for _ in 0..<(Int(count[1]) << 8 | Int(count[2])) {
                    let rectangle = try read(12)
                    let width = Int(rectangle[4]) << 8 | Int(rectangle[5]), height = Int(rectangle[6]) << 8 | Int(rectangle[7])
                    // One pixel was asked for, in raw encoding: anything much larger was not.
                    guard rectangle[8...11].allSatisfy({ $0 == 0 }), width * height <= 64 * 64 else { throw .rejected("the server sent an update deskd did not ask for") }
                    _ = try read(width * height * server.bitsPerPixel / 8)
                }
                return
            case 2:   // Bell
                continue
            case 3:   // ServerCutText
                _ = try read(3)
                let length = Int(try readUInt32())
                guard length <= 1 << 20 else { throw .rejected("the server sent an oversized clipboard") }
                _ = try read(length)
            default:
                throw .rejected("the server sent a message deskd does not know")
            }
        }
    }

    /// A second descriptor (close-on-exec) for this connection, for a caller that goes on
    /// speaking RFB over it after `authenticate` (the browser gateway relays it); this client
    /// still closes its own when it goes.
    public func duplicateSocket() throws(Failure) -> Int32 {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw .rejected("the connection could not be handed over: \(String(cString: strerror(errno)))") }
        return copy
    }

    // MARK: Bounded I/O

    private func readUInt32() throws(Failure) -> UInt32 {
        try read(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    private func read(_ count: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            guard Self.wait(fd, for: Int16(POLLIN), until: deadline) else { throw .silent }
            let n = bytes[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard n > 0 else { throw got == 0 && count == 12 ? .refused : .silent }
            got += n
        }
        return bytes
    }

    private func write(_ bytes: [UInt8]) throws(Failure) {
        var sent = 0
        while sent < bytes.count {
            guard Self.wait(fd, for: Int16(POLLOUT), until: deadline) else { throw .silent }
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard n > 0 else { throw .silent }
            sent += n
        }
    }

    private static func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        let left = deadline - ContinuousClock.now
        let milliseconds = max(0, Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
        var pfd = pollfd(fd: fd, events: events, revents: 0)
        return retryingEINTR { poll(&pfd, 1, milliseconds) } == 1 && pfd.revents & events != 0
    }
}
