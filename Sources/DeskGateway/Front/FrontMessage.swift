import FoundationEssentials

/// What deskd-web, the web front, asks deskd over deskd's front socket. Every decision is
/// deskd's: the front holds no password and opens no desktop itself.
public enum FrontRequest: Sendable, Equatable, Codable {
    /// A link's token, traded for a cookie (`FrontEvent.exchanged`).
    case exchange(call: UInt64, token: String)
    /// A cookie, spent at a WebSocket upgrade (`FrontEvent.redeemed`).
    case redeem(call: UInt64, cookie: String)
    /// The desktop's socket for a relay deskd granted (`FrontEvent.connected`, with the socket).
    case connect(call: UInt64, relay: UInt64)
    /// A relay has ended; its browser no longer counts as a viewer.
    case relayEnded(relay: UInt64)
    /// The metrics text for a scrape of `/metrics` (`FrontEvent.scraped`).
    case scrape(call: UInt64)
    /// The gateway's counters now, for deskd's metrics.
    case counts(GatewayMetrics.Snapshot)
    /// A listener deskd passed could not be served (its TLS material, most likely).
    case listenerFailed(listener: String, reason: String)
}

/// What deskd tells its web front.
public enum FrontEvent: Sendable, Equatable, Codable {
    /// First, on every connection: what the front serves. nil `gateway`: no gateway.
    case setup(gateway: GatewayConfiguration?)
    /// A listening socket to serve ("gateway", with its TLS material where it has some, or
    /// "metrics"): carries the socket.
    case listen(listener: String, tls: TLSMaterial?)
    case exchanged(call: UInt64, cookie: String?, viewOnly: Bool)
    case redeemed(call: UInt64, grant: GatewayGrant?)
    /// Carries the desktop's socket, logged in to, when `refusal` is nil.
    case connected(call: UInt64, refusal: DesktopRefusal?)
    case scraped(call: UInt64, text: String)
    /// Close these relays: their session ended, or its links were taken back.
    case disconnect(relays: [UInt64])
}

/// The records' encoding: JSON, one message per record.
public enum FrontWire {
    /// The most a front's message may be; deskd drops a front that sends more. A token or a
    /// cookie is under a hundred bytes, counts a few hundred.
    public static let requestLimit = 16 << 10
    /// The most one of deskd's messages may be: the metrics text and the TLS chain fit well within.
    public static let eventLimit = 1 << 20

    public static func encode<T: Encodable>(_ message: T) -> [UInt8] {
        // Encoding these types cannot fail: no floats, no custom encoders.
        (try? Array(JSONEncoder().encode(message))) ?? []
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}
