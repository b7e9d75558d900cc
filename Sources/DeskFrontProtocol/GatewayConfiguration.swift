/// Where and how the gateway listens, and what it lets browsers do.
public struct GatewayConfiguration: Sendable, Equatable, Codable {
    /// Which way cut text may travel between a browser and a desktop.
    ///
    /// The gateway filters the browser's ClientCutText itself. Xvnc's ServerCutText arrives
    /// among framebuffer updates whose lengths depend on their encodings, so the gateway does
    /// not parse that direction: `off` and `fromBrowser` keep the desktop's clipboard from a
    /// browser only when Xvnc is started with `-SendCutText=0` (deskd's wiring passes it).
    public enum Clipboard: String, Sendable, CaseIterable, Codable {
        case both
        case toBrowser = "to-browser"
        case fromBrowser = "from-browser"
        case off

        /// Whether ClientCutText from a browser reaches the desktop.
        public var fromBrowserAllowed: Bool { self == .both || self == .fromBrowser }
        /// Whether the desktop's clipboard may reach a browser (Xvnc's -SendCutText).
        public var toBrowserAllowed: Bool { self == .both || self == .toBrowser }
    }

    /// The oldest TLS the gateway speaks. TLS 1.0 and 1.1 are never among them: their only
    /// ciphers are CBC with MAC-then-encrypt or RC4, and browsers dropped them in 2020.
    public enum TLSMinimum: String, Sendable, CaseIterable, Codable {
        case tls12 = "1.2"
        case tls13 = "1.3"
    }

    /// What one connection may cost the gateway.
    public struct Limits: Sendable, Equatable, Codable {
        /// Open connections (HTTP and WebSocket together); past it, new ones are closed at once.
        public var maxConnections: Int
        /// Open connections from one remote address, so one machine cannot take every slot.
        /// Loopback counts as an address too; behind a proxy named in `trustedProxies`, the
        /// address is the browser's, from the proxy's X-Forwarded-For.
        public var maxConnectionsPerAddress: Int
        /// A request's header block, in bytes.
        public var maxHeaderBytes: Int
        /// One WebSocket frame's payload, in bytes.
        public var maxFrameBytes: Int
        /// One ClientCutText's text, in bytes.
        public var maxClipboardBytes: Int
        /// From accepting a connection (or finishing a response) to a complete request, and from
        /// the WebSocket upgrade to the end of the RFB handshake: a client that dribbles is cut off.
        public var handshakeTimeout: Duration
        /// To send a response to a client that reads slowly.
        public var responseTimeout: Duration
        /// A relay with nothing in either direction for this long is closed. The gateway pings
        /// the browser well within it, so a browser that is there answers and stays.
        public var idleTimeout: Duration
        /// A browser that takes none of what the gateway sends for this long is cut off: what
        /// it is sent would otherwise wait in deskd.
        public var stallTimeout: Duration

        public init(maxConnections: Int = 256, maxConnectionsPerAddress: Int = 32, maxHeaderBytes: Int = 16 << 10, maxFrameBytes: Int = 1 << 20,
                    maxClipboardBytes: Int = 1 << 20, handshakeTimeout: Duration = .seconds(10), responseTimeout: Duration = .seconds(60),
                    idleTimeout: Duration = .seconds(3600), stallTimeout: Duration = .seconds(60)) {
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.maxHeaderBytes = maxHeaderBytes
            self.maxFrameBytes = maxFrameBytes
            self.maxClipboardBytes = maxClipboardBytes
            self.handshakeTimeout = handshakeTimeout
            self.responseTimeout = responseTimeout
            self.idleTimeout = idleTimeout
            self.stallTimeout = stallTimeout
        }

        /// How often a relay looks at its deadlines and pings its browser: a quarter of the
        /// shorter one, at most every 30 s.
        public var relayTick: Duration {
            min(min(idleTimeout, stallTimeout) / 4, .seconds(30))
        }
    }

    public var host: String
    /// 0: the kernel picks one (tests); `Gateway.port()` tells which.
    public var port: Int
    /// PEM certificate chain and key; both nil serves plain HTTP, which only a loopback address may.
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// With a certificate: the oldest TLS a browser may use.
    public var tlsMinimum: TLSMinimum
    public var novncDirectory: String
    public var clipboard: Clipboard
    public var limits: Limits
    /// The origin browsers load the pages from when it is not this listener's own: behind a
    /// TLS-terminating proxy, "https://desk.example.org". nil: the scheme of this listener and
    /// the request's Host.
    public var publicOrigin: String?
    /// Peers whose X-Forwarded-For is believed (the admin's reverse proxy): a browser behind one
    /// is counted against the per-address cap by its own address. Exact addresses.
    public var trustedProxies: Set<String>
    /// The header a trusted proxy names its signed-in user in (the portal's single sign-on);
    /// from any other peer a request carrying it is refused. nil: no single sign-on.
    public var singleSignOnHeader: String?

    public init(host: String = "127.0.0.1", port: Int = 6080, tlsCertificatePath: String? = nil, tlsKeyPath: String? = nil,
                novncDirectory: String = "/usr/share/novnc", clipboard: Clipboard = .both, limits: Limits = Limits(),
                publicOrigin: String? = nil, trustedProxies: Set<String> = [], tlsMinimum: TLSMinimum = .tls12,
                singleSignOnHeader: String? = nil) {
        self.host = host
        self.port = port
        self.tlsCertificatePath = tlsCertificatePath
        self.tlsKeyPath = tlsKeyPath
        self.tlsMinimum = tlsMinimum
        self.novncDirectory = novncDirectory
        self.clipboard = clipboard
        self.limits = limits
        self.publicOrigin = publicOrigin
        self.trustedProxies = trustedProxies
        self.singleSignOnHeader = singleSignOnHeader
    }

    /// Whether this listener speaks TLS.
    public var isTLS: Bool { tlsCertificatePath != nil }

    /// Refuses a configuration the gateway must not run with, in a sentence.
    public func validate() throws(GatewayError) {
        guard (0...65535).contains(port) else { throw GatewayError(.badListen, "the gateway's port \(port) is not between 0 and 65535") }
        switch (tlsCertificatePath, tlsKeyPath) {
        case (nil, nil):
            guard Self.isLoopback(host) else {
                throw GatewayError(.plainHTTPOffLoopback, "the gateway would serve plain HTTP on \(host), which is not a loopback address: set tls_certificate and tls_key, or listen on 127.0.0.1 behind a proxy that does TLS")
            }
        case (_?, nil), (nil, _?):
            throw GatewayError(.incompleteTLS, "the gateway needs both tls_certificate and tls_key, or neither")
        case (_?, _?):
            break
        }
    }

    /// 127.0.0.0/8, ::1 and localhost: what a browser on another machine cannot reach.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            guard let value = Int(part), (0...255).contains(value) else { return false }
            return String(value) == part
        }
    }
}
