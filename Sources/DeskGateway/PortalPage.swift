/// The web portal's page: log in with the host's account, then one card per desktop (start,
/// open, share view-only, end). Plain HTML, CSS and JavaScript with no third-party code, a thin
/// client of the portal's API (`POST /api/request` is the control protocol). The three files
/// live in Templates/portal (portal.html, portal.css, portal.js), installed beside the xstartup
/// templates; deskd reads them from its template directories and hands them to the web front at
/// its setup, so the front reads no file of its own to serve them.
public struct PortalPage: Sendable, Equatable, Codable {
    public var html: String
    public var style: String
    public var script: String

    public init(html: String, style: String, script: String) {
        self.html = html
        self.style = style
        self.script = script
    }

    /// Only this origin's scripts, styles and requests; no frames, no forms elsewhere.
    static let contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

    /// What a portal without its files answers (`/` and its files): deskd found none to hand over.
    static let missingSentence = "The portal's page is not installed (portal/ beside deskd's xstartup templates); reinstall deskd, or tell an admin.\n"
}
