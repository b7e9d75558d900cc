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
