import DeskCore
import FoundationEssentials

/// What deskd tells its web front.
public enum FrontEvent: Sendable, Equatable, Codable {
    /// First, on every connection: what the front serves. nil `gateway`: no gateway; nil
    /// `portal`: the portal's page files were not found (its page answers 503 and says so).
    case setup(gateway: GatewayConfiguration?, portal: PortalPage?)
    /// A listening socket to serve ("gateway", with its TLS material where it has some, or
    /// "metrics"): carries the socket.
    case listen(listener: String, tls: TLSMaterial?)
    /// nil `cookie`: refused; `forNamedViewers`: because the link is for accounts this browser's login is none of.
    case exchanged(call: UInt64, cookie: String?, viewOnly: Bool, forNamedViewers: Bool)
    /// nil `grant`: the cookie is unknown, spent or expired. A grant carries the desktop's
    /// socket, logged in to, when `refusal` is nil; with a refusal the desktop could not be
    /// reached (the gateway tells the browser so in RFB).
    case redeemed(call: UInt64, grant: GatewayGrant?, refusal: DesktopRefusal?)
    case scraped(call: UInt64, text: String)
    /// Close these relays: their session ended, or its links were taken back.
    case disconnect(relays: [UInt64])
    case loginStep(call: UInt64, step: LoginStep)
    /// nil: no such login (never was, ended, or timed out).
    case identity(call: UInt64, identity: WebIdentity?)
    /// A watch's end: the changes' count when something changed (or at once), nil when nothing
    /// did in time or deskd has as many watches as it keeps; `loggedIn` false: the login has ended.
    /// `account`: the login's uid (the front bounds a login's and an account's event streams).
    case watched(call: UInt64, generation: UInt64?, loggedIn: Bool, account: UInt32?)
    /// The control protocol's response JSON, and the HTTP status it maps to.
    case answered(call: UInt64, status: Int, body: String)
    /// A file call's answer (`FrontRequest.files`, `.transferEnded`). A transfer's answer carries
    /// one descriptor (the file, the archive's pipe, the upload's unnamed file) and the number
    /// the front reports its end under; nil `answer`: a download's end, recorded.
    case filed(call: UInt64, transfer: UInt64?, answer: FileAnswer?)
}
