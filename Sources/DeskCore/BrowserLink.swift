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

/// What `deskctl url --revoke` took back, and what `deskctl passwd` takes back with the old
/// password: links not yet used, which now open nothing, and browsers connected, now closed.
public struct LinkRevocation: Codable, Sendable, Equatable {
    public var display: Display
    /// Unused links (and links whose page was opened but whose desktop was not yet shown).
    public var links: Int
    /// Browser connections to the desktop that were closed.
    public var browsers: Int
    /// Only view-only links and viewers were taken back (a new view-only password); the
    /// owner's own stay.
    public var viewOnlyOnly: Bool

    public init(display: Display, links: Int, browsers: Int, viewOnlyOnly: Bool) {
        self.display = display
        self.links = links
        self.browsers = browsers
        self.viewOnlyOnly = viewOnlyOnly
    }

    /// "2 unused links voided and 1 browser closed", for deskctl and the audit trail.
    public var summary: String {
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        let kind = viewOnlyOnly ? "view-only " : ""
        return "\(count(links, "unused \(kind)link")) voided and \(count(browsers, "\(kind)browser")) closed"
    }
}
