import DeskCore

/// Everything deskd can be told. Defaults are built in, so no file is needed.
public struct DaemonConfiguration: Sendable {
    public var socketPath = ControlProtocol.defaultSocketPath
    /// Runtime state: session records, per-session directories. Host-runtime only (a reboot ends every session).
    public var stateDirectory = "/run/deskd"
    /// Members of this group may act on every user's sessions, as root may.
    public var adminGroup = "deskd-admin"
    public var minimumUID: UInt32 = 1000
    public var displayRange: ClosedRange<Int> = 1...99
    /// Searched in order; the first holding `<name>.xstartup` wins, so /etc overrides what ships.
    public var templateDirectories = ["/etc/deskd/templates", "/usr/local/share/deskd/templates", "/usr/share/deskd/templates"]
    public var defaultDesktop = "xterm"
    public var defaultGeometry = Geometry.default
    public var defaultDepth = ColorDepth.default
    public var xvncPath = "/usr/bin/Xtigervnc"
    /// How long Xvnc has to answer an RFB handshake before the start fails.
    public var startTimeout: Duration = .seconds(20)
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

    public init() {}

    public var sessionRecordsDirectory: String { stateDirectory + "/sessions" }
    public var sessionDirectoriesRoot: String { stateDirectory + "/displays" }
}
