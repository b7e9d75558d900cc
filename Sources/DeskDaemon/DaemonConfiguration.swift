import DeskCore

/// Everything deskd can be told. Defaults are built in, so no file is needed;
/// /etc/deskd/deskd.toml (Templates/deskd.toml documents every key) and flags override them.
public struct DaemonConfiguration: Sendable {
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

    /// Where Xvnc listens for viewers: loopback only unless the admin names an address.
    public var vncExposure = VNCExposure()

    public init() {}

    public var sessionRecordsDirectory: String { runtimeDirectory + "/sessions" }
    public var sessionDirectoriesRoot: String { runtimeDirectory + "/displays" }
    public var auditLogPath: String { stateDirectory + "/audit.log" }
}

/// How far Xvnc's RFB port reaches, and what a viewer must do to get in.
public struct VNCExposure: Sendable, Equatable {
    /// nil: 127.0.0.1 only (viewers come through an ssh tunnel). Otherwise the address
    /// Xvnc binds ("0.0.0.0" for every interface).
    public var listenAddress: String?
    /// Xvnc's -SecurityTypes. "None" is never accepted: on a shared host every local user
    /// reaches loopback, so an unauthenticated desktop is everyone's desktop.
    public var securityTypes = ["VncAuth"]
    public var tlsCertificate: String?
    public var tlsKey: String?

    public static let knownSecurityTypes = ["VncAuth", "TLSVnc", "X509Vnc"]

    public init() {}

    public var isLoopbackOnly: Bool { listenAddress == nil || listenAddress == "127.0.0.1" || listenAddress == "localhost" }

    /// Where deskd itself reaches Xvnc for readiness checks and probes.
    public var reachableAddress: String { isLoopbackOnly || listenAddress == "0.0.0.0" ? "127.0.0.1" : listenAddress! }

    /// Whether deskd can log in with the session password (VncAuth, plain or inside TLSVnc);
    /// an X509Vnc-only server would need the viewer's trust in the certificate.
    public var allowsPasswordProbe: Bool { securityTypes.contains("VncAuth") }

    /// `tlsFiles`: the session's copies of the certificate and key (Xvnc runs as the user).
    public func xvncArguments(tlsFiles: (certificate: String, key: String)?) -> [String] {
        var arguments = isLoopbackOnly ? ["-localhost"] : ["-interface", listenAddress!]
        arguments += ["-SecurityTypes", securityTypes.joined(separator: ",")]
        if let tlsFiles {
            arguments += ["-X509Cert", tlsFiles.certificate, "-X509Key", tlsFiles.key]
        }
        return arguments
    }
}
