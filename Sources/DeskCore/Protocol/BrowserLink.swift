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
    /// The share this link is (`url --revoke --share ID` takes back it and the browser it opened).
    public var share: String?
    /// Only these accounts may use it, each logged in to the portal in the browser that opens it.
    public var viewers: [String]?

    public init(display: Display, url: String, expiresAt: Date, viewOnly: Bool, share: String? = nil, viewers: [String]? = nil) {
        self.display = display
        self.url = url
        self.expiresAt = expiresAt
        self.viewOnly = viewOnly
        self.share = share
        self.viewers = viewers
    }

    /// How long a link waits for its one use unless `--ttl` says otherwise, and at most.
    public static let defaultTTLSeconds = 60
    public static let maximumTTLSeconds = 24 * 3600
    /// The most accounts one link may name.
    public static let maximumViewers = 16
}

/// One share of a session's desktop, as `deskctl url --shares` lists it: a link not yet used, or
/// the browsers a used one opened. The link's token is never in it.
public struct LinkShare: Codable, Sendable, Equatable {
    /// Its id (`deskctl url --revoke --share ID`).
    public var share: String
    public var viewOnly: Bool
    /// The accounts that may use it; nil: whoever holds the link.
    public var viewers: [String]?
    /// Who made it.
    public var issuedBy: String
    /// When its link stops opening anything; nil once it has been used.
    public var expiresAt: Date?
    /// Browsers showing the desktop through it now.
    public var browsers: Int

    public init(share: String, viewOnly: Bool, viewers: [String]?, issuedBy: String, expiresAt: Date?, browsers: Int) {
        self.share = share
        self.viewOnly = viewOnly
        self.viewers = viewers
        self.issuedBy = issuedBy
        self.expiresAt = expiresAt
        self.browsers = browsers
    }
}
