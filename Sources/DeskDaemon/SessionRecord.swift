import DeskCore

/// What deskd persists per session: the session and where its processes and files live.
struct SessionRecord: Codable, Sendable {
    var session: Session
    /// The session's cgroup, if it has one.
    var cgroup: String?
    /// The deskd-session process holding the session's PAM login (nil until it is started).
    var helper: Int32?
    /// Its start time (/proc/PID/stat field 22), so a later process with its pid is never taken for it.
    var helperStartTicks: UInt64?
    /// Where the session's logs and exit statuses are kept (`<state>/logs/<id>`); nil until made.
    var logDirectory: String?
    /// The desktop's script exited and left X clients of its own running (`gnome-session &`
    /// as its last line): the session lives while they hold its display, not while the script
    /// runs. Kept across a restart of deskd, which watches those clients again on adoption.
    var desktopLeftClients: Bool?
}
