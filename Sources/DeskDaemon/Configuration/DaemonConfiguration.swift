import DeskCore
import DeskHost
import DeskLinux

/// Everything deskd can be told. Defaults are built in, so no file is needed;
/// /etc/deskd/deskd.toml (Templates/deskd.toml documents every key) and flags override them.
public struct DaemonConfiguration: Sendable, Equatable {
    /// The file these settings came from; nil for the built-in defaults alone.
    public var configurationFile: String?
    public var socketPath = ControlProtocol.defaultSocketPath
    /// Runtime state on tmpfs: session records and per-session directories with the password
    /// files. A reboot ends every session, and secrets never reach a disk.
    public var runtimeDirectory = "/run/deskd"
    /// Persistent state: the audit trail.
    public var stateDirectory = "/var/lib/deskd"
    /// Members of this group may act on every user's sessions, as root may.
    public var adminGroup = "deskd-admin"
    public var logLevel = "info"
    public var minimumUID: UInt32 = 1000
    public var displayRange: ClosedRange<Int> = 1...99
    public var limits = SessionLimits()
    /// Starts per minute per calling uid (root is not limited; nil: no limit).
    public var startsPerMinute: Int? = 10
    /// Control connections open at once, in all and per uid: a silent client holds one for
    /// at most the read deadline, and cannot hold them all.
    public var maxConnections = 128
    public var maxConnectionsPerUser = 16

    /// Searched in order; the first holding `<name>.xstartup` wins, so /etc overrides what ships.
    public var templateDirectories = ["/etc/deskd/templates", "/usr/local/share/deskd/templates", "/usr/share/deskd/templates"]
    public var defaultDesktop = "xterm"
    /// Run the user's own ~/.vnc/xstartup (as the user) when a start names no desktop.
    public var honourUserXstartup = false
    public var defaultGeometry = Geometry.default
    public var defaultDepth = ColorDepth.default
    public var xvncPath = "/usr/bin/Xtigervnc"
    /// How long Xvnc has to answer an RFB handshake before the start fails.
    public var startTimeout: Duration = .seconds(20)
    /// Each of a session's logs (Xvnc's, the desktop's) is kept up to this size, twice over.
    public var sessionLogBytes = 1 << 20
    /// Under systemd, also copy every line of a session's output to the journal. Off: the
    /// journal is readable by group adm, who are not the desktop's owner.
    public var journalOutput = false
    /// Each session's cgroup caps, where the pids and memory controllers are delegated to deskd.
    public var sessionTasksMax: Int?
    public var sessionMemoryMax: Int?
    /// Memory admission: a start that would leave less than this available (MemAvailable less
    /// `memoryPerSession`) is refused. nil: no admission by memory.
    public var memoryReserve: Int?
    /// What admission counts a new desktop to take.
    public var memoryPerSession = 256 << 20
    /// Refuse accounts that cannot log in: a nologin or false shell, the overflow account, a
    /// home that is not there.
    public var requireLoginShell = true
    /// Each user keeps the log directories of this many ended sessions (`deskctl logs`); older ones go.
    public var keptSessionLogs = 10
    /// Between SIGTERM and SIGKILL when a session is killed.
    public var killGrace: Duration = .seconds(3)
    /// When the desktop (xstartup) exits, end the session, as vncserver does.
    public var desktopExitEndsSession = true
    /// deskd's own idle policy: kill a session that has had no viewer this long (nil: never).
    public var idleLimitSeconds: Int?
    /// Passed to Xvnc as -MaxIdleTime: Xvnc exits after this long without user input.
    public var xvncMaxIdleSeconds: Int?
    /// Passed to Xvnc as -MaxDisconnectionTime: Xvnc exits after this long with no viewer
    /// (its clock starts when Xvnc starts, so an unvisited session ends too).
    public var xvncMaxDisconnectionSeconds: Int?
    /// PATH inside sessions.
    public var sessionPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"

    /// Where Xvnc listens for viewers: its own Unix socket unless the admin turns TCP on.
    public var vncExposure = VNCExposure()
    /// The browser gateway; off by default.
    public var web = WebSettings()
    /// Where `/metrics` is served (`[metrics] listen`); nil: nowhere (deskctl metrics still answers).
    public var metricsListen: ListenAddress?
    /// Desktops as Slurm jobs on a cluster's compute nodes; off by default.
    public var slurm = SlurmSettings()
    /// The portal's file transfers (`[files]`).
    public var files = FilePolicy()

    public init() {}

    public var sessionRecordsDirectory: String { runtimeDirectory + "/sessions" }
    public var sessionDirectories: SessionDirectories { SessionDirectories(runtimeDirectory: runtimeDirectory) }
    public var auditLogPath: String { stateDirectory + "/audit.log" }
    /// Each session's output and exit statuses, root's, kept after the session ends.
    public var sessionLogsDirectory: String { stateDirectory + "/logs" }
}
