import FoundationEssentials

/// Where a portal login stands.
public enum LoginStep: Sendable, Equatable, Codable {
    /// PAM asks something more: shown in the page, answered with `loginAnswer`.
    case question(attempt: String, text: String, echo: Bool, messages: [String])
    /// Logged in: the cookie to set, and who it is.
    case loggedIn(cookie: String, identity: WebIdentity)
    /// Refused, in one sentence.
    case refused(message: String)
}
