import Glibc

/// A `sockaddr_in`: an IPv4 address and a TCP port, for connect and bind, as
/// `UnixSocketAddress` is for a Unix socket. deskd's own TCP (Xvnc's port, the gateway's and
/// the metrics listener through NIO) is on IPv4 only.
public struct InternetSocketAddress {
    private var address = sockaddr_in()

    /// nil when `host` is not a dotted IPv4 address or `port` is out of range.
    public init?(host: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
    }

    /// 127.0.0.1:`port`; port 0 lets the kernel pick one at bind.
    public static func loopback(port: Int) -> InternetSocketAddress {
        InternetSocketAddress(host: "127.0.0.1", port: port)!
    }

    /// Calls `body` with the address and its length, for connect or bind.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// The IPv4 port a socket is bound to (after a bind to port 0, the kernel's pick); nil if it is not.
    public static func boundPort(of fd: Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A port the kernel hands out on loopback, free a moment ago (its socket is closed again).
    public static func freeLoopbackPort() -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard loopback(port: 0).withSockaddr({ bind(fd, $0, $1) }) == 0 else { return nil }
        return boundPort(of: fd)
    }
}

extension InternetSocketAddress {
    /// A listening TCP socket on `host` (an IPv4 or IPv6 address, "[::1]", or a name such as
    /// "localhost", as getaddrinfo resolves it) and `port`, close-on-exec, for deskd to bind and
    /// hand to its web front. Its port: `boundPort(of:)`.
    public static func listen(host: String, port: Int, backlog: Int32 = 1024) throws(OSError) -> Int32 {
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard (0...65535).contains(port), getaddrinfo(name, String(port), &hints, &results) == 0, let first = results else {
            throw OSError("bind", path: "\(host):\(port)", errno: EADDRNOTAVAIL)
        }
        defer { freeaddrinfo(results) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OSError("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let error = OSError("bind", path: "\(host):\(port)")
            close(fd)
            throw error
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let error = OSError("listen", path: "\(host):\(port)")
            close(fd)
            throw error
        }
        return fd
    }

    /// The TCP port a socket of either family is bound to.
    public static func anyBoundPort(of fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) } }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) } }
        default:
            return nil
        }
    }
}
