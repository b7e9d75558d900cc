import DeskFrontProtocol

extension PortalPage {
    /// Only this origin's scripts, styles and requests; no frames, no forms elsewhere.
    static let contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

    /// What a portal without its files answers (`/` and its files): deskd found none to hand over.
    static let missingSentence = "The portal's page is not installed (portal/ beside deskd's xstartup templates); reinstall deskd, or tell an admin.\n"
}
