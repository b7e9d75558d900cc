import DeskFrontProtocol
import Glibc

/// Who a browser's connection counts as, for every per-client bound of the gateway and the
/// portal (connections, event streams, login attempts and slots, pending questions): what a
/// client cannot cheaply multiply. A peer on this host (127.0.0.0/8, ::1) is the account that
/// owns its end of the connection, which the kernel knows: a local user's thousands of loopback
/// addresses are one client, and people arriving through their own `ssh -L` tunnels are each
/// their own. A remote IPv4 peer is its address; a remote IPv6 peer its /64, the least a site
/// hands one machine.
enum BrowserClient {
    /// The key for `address`. A peer on this host (a loopback address, `local`, the address the
    /// connection was made to, or any address `isThisHost` names: a local user may connect from
    /// the host's own LAN address too, which would otherwise count as a remote machine, and its
    /// /64 as a whole LAN's) is the account `owner` names, the kernel's word; nil when it cannot
    /// be learnt (a socket closed before it was accepted, a kernel without sock_diag). Such a
    /// peer is refused, never counted under a key it would share with everyone else's (issue 48:
    /// one such key let one user hold twice a client's connections and lock others out). The
    /// kernel is not asked about a remote peer: nothing on this host made its socket.
    static func key(address: String, local: String? = nil, isThisHost: (String) -> Bool = { _ in false }, owner: () -> UInt32?) -> String? {
        let address = unmapped(address)
        if isLoopback(address) || local.map(unmapped) == address || isThisHost(address) { return owner().map { "uid:\($0)" } }
        return prefix64(address) ?? address
    }

    /// A browser on this host behind a trusted proxy: the kernel cannot say whose it is, so all
    /// of them are one client (the proxy vouches for the address, not for an account).
    static let loopbackBehindProxy = "loopback-behind-proxy"

    /// 127.0.0.0/8 or ::1 (an IPv4-mapped address already unmapped).
    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.") && address.split(separator: ".").count == 4
    }

    /// "::ffff:192.0.2.1" as "192.0.2.1": an IPv4 peer of a dual-stack listener.
    static func unmapped(_ address: String) -> String {
        let lower = address.lowercased()
        guard lower.hasPrefix("::ffff:"), lower.dropFirst(7).split(separator: ".").count == 4 else { return lower }
        return String(lower.dropFirst(7))
    }

    /// An IPv6 address's /64, written "2001:db8:1:2::/64"; nil for anything else.
    static func prefix64(_ address: String) -> String? {
        var parsed = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &parsed) == 1 else { return nil }
        withUnsafeMutableBytes(of: &parsed) { bytes in
            for index in 8..<16 { bytes[index] = 0 }
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &parsed, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
    }
}
