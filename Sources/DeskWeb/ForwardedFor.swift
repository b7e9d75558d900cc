import DeskFrontProtocol
import NIOHTTP1

/// The browser's address behind trusted proxies, from X-Forwarded-For.
enum ForwardedFor {
    /// The proxy appends the address it was connected from, so only the list's last entry is
    /// its word; anything left of it was written by whoever connected to the proxy and proves
    /// nothing. That last entry may be a trusted address itself (a local user going through
    /// nginx on this host is 127.0.0.1), and then counts as that address, not as whatever it
    /// wrote before. Without the header, the peer itself is the address.
    static func client(peer: String, headers: HTTPHeaders) -> String {
        let hops = headers[canonicalForm: "X-Forwarded-For"].flatMap { $0.split(separator: ",") }
            .map { hop in String(hop.filter { $0 != " " && $0 != "\t" }).lowercased() }.filter { !$0.isEmpty }
        return hops.last ?? peer
    }
}
