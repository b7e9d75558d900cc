/// The web portal's page: log in with the host's account, then one card per desktop (start,
/// open, share view-only, end). Plain HTML, CSS and JavaScript with no third-party code, a thin
/// client of the portal's API (`POST /api/request` is the control protocol). The three files
/// live in Templates/portal (portal.html, portal.css, portal.js), installed beside the xstartup
/// templates; deskd reads them from its template directories and hands them to the web front at
/// its setup, so the front reads no file of its own to serve them. A fourth, drop.js, is the
/// desktop's page's (noVNC's vnc.html, into which the front adds it): files dropped there go
/// into the owner's upload folder; without it (an older portal folder) the page is noVNC's alone.
public struct PortalPage: Sendable, Equatable, Codable {
    public var html: String
    public var style: String
    public var script: String
    /// drop.js, served at `/deskd-drop.js`; nil when the portal's folder has none.
    public var drop: String?

    public init(html: String, style: String, script: String, drop: String? = nil) {
        self.html = html
        self.style = style
        self.script = script
        self.drop = drop
    }
}
