import Glibc

/// The start of an RFB handshake over loopback TCP, enough to know a VNC server really answers:
/// its ProtocolVersion, our reply, and its list of security types.
public enum RFBHandshake {
    public enum Outcome: Sendable, Equatable {
        /// The server sent its version and offered security types.
        case answered(version: String, securityTypes: [UInt8])
        /// Nothing listens on the port.
        case refused
        /// A connection, but no complete handshake before the deadline.
        case silent
    }

    /// VNC security type numbers (RFC 6143 and TigerVNC's VeNCrypt).
    public static let vncAuthentication: UInt8 = 2
    public static let veNCrypt: UInt8 = 19

    /// `host` is an IPv4 address; Xvnc listens on loopback unless deskd is told otherwise.
    public static func attempt(host: String = "127.0.0.1", port: Int, timeoutMilliseconds: Int32) -> Outcome {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .refused }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return .refused }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 {
            guard errno == EINPROGRESS, wait(fd, for: Int16(POLLOUT), timeoutMilliseconds) else { return .refused }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else { return .refused }
        }
        guard let version = read(fd, count: 12, timeoutMilliseconds), version.starts(with: Array("RFB ".utf8)) else { return .silent }
        // Answer with the version the server offered (3.3 has no type list, and Xvnc speaks 3.8).
        guard send(fd, version, timeoutMilliseconds) else { return .silent }
        let text = String(decoding: version.dropLast(), as: UTF8.self)
        guard let count = read(fd, count: 1, timeoutMilliseconds)?.first, count > 0,
              let types = read(fd, count: Int(count), timeoutMilliseconds)
        else { return .silent }
        return .answered(version: text, securityTypes: types)
    }

    private static func wait(_ fd: Int32, for events: Int16, _ timeout: Int32) -> Bool {
        var pfd = pollfd(fd: fd, events: events, revents: 0)
        return retryingEINTR { poll(&pfd, 1, timeout) } == 1 && pfd.revents & events != 0
    }

    private static func read(_ fd: Int32, count: Int, _ timeout: Int32) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            guard wait(fd, for: Int16(POLLIN), timeout) else { return nil }
            let n = bytes[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            got += n
        }
        return bytes
    }

    private static func send(_ fd: Int32, _ bytes: [UInt8], _ timeout: Int32) -> Bool {
        guard wait(fd, for: Int16(POLLOUT), timeout) else { return false }
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }
}
