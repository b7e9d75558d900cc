import CDeskShims
import Glibc
import Synchronization

/// Who made the other end of a TCP connection from this host: the kernel records the account
/// that created each socket, and sock_diag answers for one socket by its addresses and ports.
/// A local user may connect from any of 127.0.0.0/8's sixteen million addresses, but every one
/// of those connections is theirs: counted by owner, they are one client.
public enum ConnectionOwner {
    /// The uid owning the peer's socket of the connection `peer`:`peerPort` → `local`:`localPort`
    /// (as the accepting side sees it); nil when the peer is not on this host, the kernel has no
    /// sock_diag for TCP, or the connection has already closed.
    public static func of(peer: String, peerPort: Int, local: String, localPort: Int) -> uid_t? {
        guard (1...65535).contains(peerPort), (1...65535).contains(localPort),
              let source = Address(peer), let destination = Address(local), source.family == destination.family else { return nil }
        var uid: UInt32 = 0
        let found = source.bytes.withUnsafeBytes { sourceBytes in
            destination.bytes.withUnsafeBytes { destinationBytes in
                deskd_tcp_socket_owner(source.family, sourceBytes.baseAddress, UInt16(peerPort),
                                       destinationBytes.baseAddress, UInt16(localPort), &uid)
            }
        }
        return found == 0 ? uid : nil
    }

    /// Whether `address` is one of this host's own (an interface's), as getifaddrs says: looked
    /// up at most once a second, since an attacker's connections could otherwise make a dump
    /// of the interfaces each.
    public static func isThisHost(_ address: String) -> Bool {
        guard let wanted = Address(address) else { return false }
        let now = ContinuousClock.now
        let addresses = hostAddresses.withLock { cache -> Set<[UInt8]>? in
            if let cached = cache, now - cached.at < .seconds(1) { return cached.addresses }
            guard let fresh = interfaceAddresses() else { return nil }
            cache = (now, fresh)
            return fresh
        }
        // Not known (getifaddrs failed: EMFILE, ENOMEM): this host's, so its owner is asked and
        // an unknown one refused, rather than a local user counted as a remote machine.
        return addresses?.contains(wanted.bytes) ?? true
    }

    private static let hostAddresses = Mutex<(at: ContinuousClock.Instant, addresses: Set<[UInt8]>)?>(nil)

    private static func interfaceAddresses() -> Set<[UInt8]>? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var found: Set<[UInt8]> = []
        var entry = list
        while let current = entry {
            if let socketAddress = current.pointee.ifa_addr {
                switch Int32(socketAddress.pointee.sa_family) {
                case AF_INET:
                    socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var address = v4.pointee.sin_addr
                        found.insert(withUnsafeBytes(of: &address) { Array($0) })
                    }
                case AF_INET6:
                    socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var address = v6.pointee.sin6_addr
                        found.insert(withUnsafeBytes(of: &address) { Array($0) })
                    }
                default: break
                }
            }
            entry = current.pointee.ifa_next
        }
        return found
    }

    /// An address as sock_diag takes it. An IPv4 peer of a dual-stack listener is seen as
    /// ::ffff:a.b.c.d, but its own socket is an IPv4 one: it is looked up as IPv4.
    struct Address {
        let family: Int32
        let bytes: [UInt8]

        init?(_ text: String) {
            var v4 = in_addr()
            if inet_pton(AF_INET, text, &v4) == 1 {
                family = AF_INET
                bytes = withUnsafeBytes(of: &v4) { Array($0) }
                return
            }
            var v6 = in6_addr()
            guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
            let all = withUnsafeBytes(of: &v6) { Array($0) }
            if all[0..<10].allSatisfy({ $0 == 0 }) && all[10] == 0xFF && all[11] == 0xFF {
                family = AF_INET
                bytes = Array(all[12..<16])
            } else {
                family = AF_INET6
                bytes = all
            }
        }
    }
}
