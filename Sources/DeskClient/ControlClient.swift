import DeskPOSIX
import DeskCore
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Talks to deskd over its control socket: one request, one reply, blocking.
/// Kept free of NIO so `deskctl` starts in milliseconds.
public struct ControlClient: Sendable {
    public let socketPath: String
    /// Long enough for a start (Xvnc start-up plus the desktop launch) on a loaded host.
    public var timeoutSeconds = 60

    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// The socket from `--socket`, else `$DESKD_SOCKET`, else the default.
    public static func socketPath(option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        option ?? environment[ControlProtocol.socketEnvironmentKey] ?? ControlProtocol.defaultSocketPath
    }

    public struct Unreachable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Sends a verb with its arguments, as its wire request.
    public func send(_ request: ControlRequest) throws -> Response {
        try send(request.wire)
    }

    public func send(_ request: Request) throws -> Response {
        var data = try JSONEncoder.desk.encode(request)
        data.append(UInt8(ascii: "\n"))
        let reply = try exchange(Array(data))
        do {
            return try ResponseWire.decode(reply)
        } catch {
            throw Unreachable(description: "deskd at \(socketPath) sent a reply deskctl cannot read; are deskd and deskctl the same version?")
        }
    }

    /// Sends raw bytes and returns the raw reply; the tests use it to send malformed requests.
    public func exchange(_ bytes: [UInt8]) throws -> [UInt8] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw unreachable(errno) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // deskd's control socket is a file, whose mode says who may connect. An abstract name
        // (`@name`) has no owner and anyone may bind it first, so deskctl never sends one a request.
        guard !socketPath.hasPrefix("@"), let address = UnixSocketAddress(socketPath) else {
            throw Unreachable(description: "'\(socketPath)' is not a path to deskd's control socket: write a file's path of 1 to 107 bytes, such as \(ControlProtocol.defaultSocketPath).")
        }
        guard address.withSockaddr({ connect(fd, $0, $1) }) == 0 else { throw unreachable(errno) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Unreachable(description: "deskd at \(socketPath) closed the connection before the request was sent.") }
            offset += n
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { reply += buffer[0..<n]; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw Unreachable(description: "deskd at \(socketPath) did not answer within \(timeoutSeconds) seconds; check its log (journalctl -u deskd, or /run/deskd/deskd.log under scripts/demo).")
            }
            break
        }
        guard !reply.isEmpty else {
            throw Unreachable(description: "deskd at \(socketPath) closed the connection without a reply; check its log (journalctl -u deskd, or /run/deskd/deskd.log under scripts/demo).")
        }
        return reply
    }

    private func unreachable(_ code: Int32) -> Unreachable {
        let reason = String(cString: strerror(code))
        // deskd runs as a service once installed, or from a source tree under scripts/demo.
        let hint = code == EACCES
            ? "you may not use this socket; ask an admin, or point deskctl at another with --socket or DESKD_SOCKET"
            : "start deskd (systemctl start deskd where it is installed as a service, or scripts/demo in a source tree), "
                + "or point deskctl at its socket with --socket or DESKD_SOCKET"
        return Unreachable(description: "cannot reach deskd at \(socketPath) (\(reason)); \(hint).")
    }
}
