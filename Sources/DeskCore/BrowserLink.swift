import FoundationEssentials

/// A one-time link that opens a session in a browser through deskd's gateway (`deskctl url`).
///
/// The token rides in the URL's fragment, which browsers never send to a server, so it lands
/// in no access log; the gateway's page trades it once for a short-lived cookie.
public struct BrowserLink: Codable, Sendable, Equatable {
    public var display: Display
    public var url: String
    /// After this the link opens nothing, used or not.
    public var expiresAt: Date
    /// The link watches the desktop: the gateway drops every key, pointer and clipboard message.
    public var viewOnly: Bool

    public init(display: Display, url: String, expiresAt: Date, viewOnly: Bool) {
        self.display = display
        self.url = url
        self.expiresAt = expiresAt
        self.viewOnly = viewOnly
    }

    /// How long a link waits for its one use unless `--ttl` says otherwise, and at most.
    public static let defaultTTLSeconds = 60
    public static let maximumTTLSeconds = 24 * 3600
}
