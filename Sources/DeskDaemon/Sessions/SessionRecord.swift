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
    /// A cluster desktop's secrets and where its job relays to (nil for a desktop on this host).
    var cluster: ClusterRecord?
}

/// What deskd keeps of a cluster desktop beyond its `Session` (whose `slurm` names the job). The
/// record lives on tmpfs, root's alone, like a local session's password file.
struct ClusterRecord: Codable, Sendable, Equatable {
    /// The hop key (hex) the job proves it holds, and deskd proves it holds to the job.
    var key: String
    /// The desktop's VNC passwords, which the gateway logs in with (the job holds the same).
    var password: String
    var viewOnlyPassword: String
    /// Where the job relays to its desktop, once it has reported.
    var address: String?
    var port: Int?

    var keyBytes: [UInt8]? { HexBytes.decode(key, count: HopHandshake.keyBytes) }
}
