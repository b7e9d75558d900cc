import DeskFrontProtocol
import Glibc
import NIOHTTP1

/// The browser's address behind trusted proxies, from X-Forwarded-For.
enum ForwardedFor {
    /// The proxy appends the address it was connected from, so only the list's last entry is
    /// its word; anything left of it was written by whoever connected to the proxy and proves
    /// nothing. That last entry may be a trusted address itself (a local user going through
    /// nginx on this host is 127.0.0.1), and then counts as that address, not as whatever it
    /// wrote before. Without the header, the peer itself is the address.
    ///
    /// A last entry that is no IP address is no proxy's word either (a local user connecting
    /// from a loopback proxy's address writes what it likes): the peer counts instead. Only an
    /// address can come from here, never a text that reads as another kind of client key
    /// ("uid:N" is the kernel's word alone, issue 48).
    static func client(peer: String, headers: HTTPHeaders) -> String {
        let hops = headers[canonicalForm: "X-Forwarded-For"].flatMap { $0.split(separator: ",") }
            .map { hop in String(hop.filter { $0 != " " && $0 != "\t" }).lowercased() }.filter { !$0.isEmpty }
        guard let last = hops.last else { return peer }
        return isAddress(last) ? last : peer
    }

    /// An IPv4 or IPv6 address in its textual form.
    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
