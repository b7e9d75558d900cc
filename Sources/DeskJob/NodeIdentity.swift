import DeskLinux
import Glibc

/// Who this node is to the login node: its name (what Slurm and users call it) and the address
/// the login node reaches it at.
enum NodeIdentity {
    /// uname's nodename: what slurmd took its NodeName from.
    static var name: String {
        var names = utsname()
        guard uname(&names) == 0 else { return "localhost" }
        return withUnsafeBytes(of: names.nodename) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    /// The address this node's packets to `host`:`port` leave from, which is where the login
    /// node reaches this node and the local address the report's TCP connection gets: a UDP
    /// socket connected there is given it by the kernel's routing, and sends nothing. Known
    /// before deskd answers (it may be restarting), so the relay can listen from the start.
    static func address(towards host: String, port: Int) -> String? {
        guard let remote = InternetSocketAddress(host: host, port: port) else { return nil }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard remote.withSockaddr({ connect(fd, $0, $1) }) == 0 else { return nil }
        return localAddress(of: fd)
    }

    /// The IPv4 address a socket is bound to, dotted.
    static func localAddress(of fd: Int32) -> String? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named, address.sin_family == sa_family_t(AF_INET) else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
