import FoundationEssentials

public struct Response: Codable, Sendable, Equatable {
    public var version: Int = ControlProtocol.version
    public var ok: Bool
    public var error: ErrorBody?
    /// list, kill: the sessions listed or killed. start, show: the one session.
    public var sessions: [Session]?
    /// start: how to connect.
    public var connect: ConnectHints?
    /// ping: the daemon's version.
    public var daemonVersion: String?
    /// probe: what the RFB handshake found.
    public var probe: ProbeReport?
    /// list --all (admins): displays held by X servers deskd did not start.
    public var foreign: [ForeignDisplay]?
    /// history: audit entries the caller may see, oldest first.
    public var history: [AuditEntry]?
    /// status: the daemon's own state.
    public var status: DaemonStatus?
    /// logs: a session's output and how its processes ended.
    public var logs: SessionLogs?
    /// url (and start with `web`): a one-time link that opens the session in a browser.
    public var link: BrowserLink?
    /// url with `revoke`, and passwd: the links and browsers taken back.
    public var revoked: LinkRevocation?
    /// url with `shares`: the session's links not yet used and the browsers its links opened.
    public var shares: [LinkShare]?
    /// metrics (admins): every metric in Prometheus's text format.
    public var metrics: String?
    /// desktops: every desktop template, installed or not.
    public var desktops: [DesktopInfo]?
    /// desktops, where this host submits desktops to Slurm: what a cluster start may ask for.
    public var cluster: ClusterChoices?
    /// desktops, where deskd reaps idle desktops itself (`--idle-limit`): how long a desktop on
    /// this host may go without a viewer.
    public var idleLimitSeconds: Int?

    public init(sessions: [Session]? = nil, connect: ConnectHints? = nil, daemonVersion: String? = nil, probe: ProbeReport? = nil,
                history: [AuditEntry]? = nil, status: DaemonStatus? = nil, logs: SessionLogs? = nil, link: BrowserLink? = nil,
                metrics: String? = nil, desktops: [DesktopInfo]? = nil, revoked: LinkRevocation? = nil, shares: [LinkShare]? = nil, cluster: ClusterChoices? = nil) {
        self.ok = true
        self.cluster = cluster
        self.shares = shares
        self.revoked = revoked
        self.desktops = desktops
        self.metrics = metrics
        self.link = link
        self.logs = logs
        self.history = history
        self.status = status
        self.sessions = sessions
        self.connect = connect
        self.daemonVersion = daemonVersion
        self.probe = probe
    }

    public init(error: DeskError) {
        self.ok = false
        self.error = ErrorBody(code: error.code, message: error.message, cause: error.cause)
    }

    public var deskError: DeskError? {
        error.map { DeskError($0.code, $0.message, cause: $0.cause) }
    }
}
