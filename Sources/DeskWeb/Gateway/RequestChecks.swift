import DeskFrontProtocol
import NIOHTTP1

/// What the gateway reads from a request's head, each the one way it is read.
enum RequestChecks {
    static let cookieName = "deskd_gateway"

    // MARK: Single sign-on

    /// The account a trusted proxy's sign-on names for this request; nil when single sign-on is
    /// off, the peer is no trusted proxy, or the header is absent, empty or repeated.
    static func singleSignOnUser(_ headers: HTTPHeaders, configuration: GatewayConfiguration, proxy: String?) -> String? {
        guard let header = configuration.singleSignOnHeader, proxy != nil else { return nil }
        let values = headers[canonicalForm: header]
        guard values.count == 1, let user = values.first.map(String.init), !user.isEmpty, user.utf8.count <= 64 else { return nil }
        return user
    }

    /// Whether a request names a signed-in user although its peer is no trusted proxy: a browser
    /// (or anyone) writing the header itself, refused outright rather than ignored, so that a
    /// proxy misconfigured to pass browsers' headers through shows up at once.
    static func forgesSingleSignOn(_ headers: HTTPHeaders, configuration: GatewayConfiguration, proxy: String?) -> Bool {
        guard let header = configuration.singleSignOnHeader, proxy == nil else { return false }
        return headers.contains(name: header)
    }

    static func forgedUserSentence(_ configuration: GatewayConfiguration) -> String {
        "The \(configuration.singleSignOnHeader ?? "sign-on") header is taken only from this site's own proxy; go through the site's address."
    }

    /// The request target's path, without query or fragment: what may be logged.
    static func path(of uri: String) -> Substring {
        let end = uri.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? uri.endIndex
        return uri[..<end]
    }

    /// Whether the page that sent this request was loaded from the gateway itself. Browsers send
    /// Origin on every WebSocket handshake and every POST from script; a page of another site
    /// cannot forge it, so this is what stops another site from using a visitor's cookie.
    static func isSameOrigin(_ headers: HTTPHeaders, tls: Bool, publicOrigin: String?) -> Bool {
        let origins = headers["Origin"]
        guard origins.count == 1, let origin = origins.first?.lowercased() else { return false }
        if let publicOrigin { return origin == publicOrigin.lowercased() }
        let hosts = headers["Host"]
        guard hosts.count == 1, let host = hosts.first?.lowercased(), !host.isEmpty else { return false }
        return origin == (tls ? "https://" : "http://") + host
    }

    /// The value of cookie `name`, if the request carries it exactly once.
    static func cookie(_ name: String, in headers: HTTPHeaders) -> String? {
        var found: [Substring] = []
        for header in headers["Cookie"] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop(while: { $0 == " " })
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
                found.append(trimmed[trimmed.index(after: equals)...])
            }
        }
        guard found.count == 1, let value = found.first, !value.isEmpty, value.count <= 256 else { return nil }
        return String(value)
    }

    /// A link token as deskd mints them: printable, no separators, not absurdly long.
    static func plausibleToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 256 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// Whether the request's Host may reach the portal: with a public origin set, anything (the
    /// proxy in front checks names); on a loopback listener, only a loopback name with its port,
    /// so that DNS rebinding cannot make another site's name this portal's origin.
    static func hostFits(_ headers: HTTPHeaders, configuration: GatewayConfiguration) -> Bool {
        guard configuration.publicOrigin == nil, GatewayConfiguration.isLoopback(configuration.host) else { return true }
        let hosts = headers["Host"]
        guard hosts.count == 1, let host = hosts.first?.lowercased() else { return false }
        let name: Substring
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            name = host[host.index(after: host.startIndex)..<close]
        } else {
            name = host.split(separator: ":", maxSplits: 1).first ?? ""
        }
        return GatewayConfiguration.isLoopback(String(name))
    }
}
