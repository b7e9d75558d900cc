/// What of a session is on the host: each step of a start adds its part before it acts, and a
/// teardown removes exactly the parts there, so a start that fails half way unwinds what it did
/// and nothing else. An adopted session has every part. Its logs are not a part: they are kept
/// after its end, a failed start's too (deskctl logs says why it failed), and pruned by
/// sessions.keep_logs.
struct SessionFootprint: OptionSet, Sendable {
    let rawValue: UInt8

    /// Its directory (password, Xauthority, xstartup, TLS files) under the runtime directory.
    static let directory = SessionFootprint(rawValue: 1 << 0)
    /// Its cgroup.
    static let cgroup = SessionFootprint(rawValue: 1 << 1)
    /// deskd-session and what it started: the PAM login, Xvnc, the desktop.
    static let processes = SessionFootprint(rawValue: 1 << 2)
    /// The display's link to the session's directory (what `deskctl show` hands to viewers).
    static let published = SessionFootprint(rawValue: 1 << 3)
    /// Its record in the state directory, for the next deskd.
    static let record = SessionFootprint(rawValue: 1 << 4)

    /// A cluster desktop's Slurm job: the teardown tells the job to end and cancels it.
    static let job = SessionFootprint(rawValue: 1 << 5)

    /// Everything a desktop on this host has.
    static let all: SessionFootprint = [.directory, .cgroup, .processes, .published, .record]
}
