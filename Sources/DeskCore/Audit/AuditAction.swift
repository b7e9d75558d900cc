/// What an audit entry records: a state-changing request, or a session's end (which deskd
/// itself records, whatever ended it, so `history` says how every session ended).
///
/// The raw values are the trail's `command` field; the request verbs keep their names.
public enum AuditAction: String, Codable, Sendable {
    case start, kill, reap, passwd
    /// A one-time browser link handed out (`deskctl url`): access, like a password.
    case url
    /// A session ended: by request, on its own, or because deskd found it gone.
    case ended
    /// A login to the web portal, accepted or refused (and throttled).
    case login
    /// A portal login ended by its user.
    case logout
    /// A cluster desktop's time limit made longer.
    case extend
    /// A file brought into, or taken from, a desktop owner's home through the portal.
    case upload, download
    /// A summary: how many entries of one caller the rate limit left out (`suppressed`).
    case suppressed
}
