/// The program a desktop draws on, which serves its screen to viewers in RFB: Xvnc today. deskd's
/// local sessions and a cluster desktop's job on its node start theirs from the same description
/// (`commandLine`), so a second kind (a Wayland compositor with a VNC server) is a new
/// conformance, not a change to admission, the registry, the gateway or the portal.
///
/// Readiness is the same for every kind: the server answers a real RFB greeting on its endpoint
/// (RFBHandshake, from the pid that was started), then a process of the desktop holds a
/// connection to the server (XClients: the desktop's first client).
public protocol DisplayServer: Sendable {
    /// What it is, in a sentence's words ("Xtigervnc", "sway with wayvnc").
    var name: String { get }
    /// What `XDG_SESSION_TYPE` says to the desktop's programs ("x11", "wayland").
    var sessionType: String { get }
    /// The command line that starts it, executable first.
    func commandLine(_ needs: DisplayServerNeeds) -> [String]
    /// What the desktop's programs need in their environment to reach it (DISPLAY, XAUTHORITY).
    func clientEnvironment(_ needs: DisplayServerNeeds) -> [String: String]
    /// The command that runs the desktop's script (`xstartup`) on it.
    func desktopCommand(xstartup: String) -> [String]
    /// Whether its last log lines say another server took the display between the look and
    /// its own lock (then the next display is tried).
    func displayWasTaken(log: [String]) -> Bool
}

/// Where a desktop's programs connect to its display server, as the kernel's socket tables name
/// the connections the server accepted: how deskd sees the desktop's first client. A running
/// session knows it from its record (`ManagedSession.clientSocket`), after a restart too.
public enum DisplayClientSocket: Sendable, Equatable {
    /// X display N: /tmp/.X11-unix/XN and its abstract twin, which any local user can bind, so
    /// only connections the server's own pid accepted count.
    case x11(Display)
    /// Sockets whose path starts with one of `prefixes`, each inside a 0700 directory of the
    /// owner's: whoever accepted a connection there is the owner's, so any connection to one
    /// counts (a Wayland compositor's, in the login's runtime directory or the private one).
    case inOwnersDirectories(prefixes: [String])
}

/// Which kind of display server a desktop has, as a session's record and its JSON say it.
public enum DisplayServerKind: String, Sendable, Codable, Equatable, CaseIterable {
    case xvnc
    case wayland
}

/// What a display server is given: its display, the desktop's private files (the directory is
/// the owner's, 0700), its screen, how viewers reach it, and what the admin's policy adds.
public struct DisplayServerNeeds: Sendable, Equatable {
    public var display: Display
    /// The session's private directory (the owner's, 0700), where its sockets are.
    public var directory: String
    /// The X cookie a client must show; without it every local user could open the display.
    public var xauthority: String
    /// The VNC password file (VncAuth).
    public var passwordFile: String
    /// RFB's Unix socket, inside the private directory.
    public var rfbSocket: String
    public var geometry: Geometry
    public var depth: Int
    /// The name a viewer shows: "alice's desktop (:3)".
    public var title: String
    /// How viewers reach it and what they must do to get in. A cluster node's is always the
    /// socket with VncAuth: its relay is the way in.
    public var exposure: VNCExposure
    /// The session's copies of the admin's certificate and key, with a TLS security type.
    public var tlsFiles: TLSFiles?
    public var policy: DisplayServerPolicy
    /// The session runs in a mount namespace whose /tmp/.X11-unix is its own, and deskd-session
    /// holds the display's abstract name (a desktop on this host): the X server listens on the
    /// socket file only. A cluster node's job has neither, so its Xvnc keeps both (THREAT_MODEL).
    public var privateXSockets = false

    public struct TLSFiles: Sendable, Equatable {
        public var certificate: String
        public var key: String

        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    public init(display: Display, directory: String = "", xauthority: String, passwordFile: String, rfbSocket: String, geometry: Geometry, depth: Int, title: String,
                exposure: VNCExposure = VNCExposure(), tlsFiles: TLSFiles? = nil, policy: DisplayServerPolicy = DisplayServerPolicy()) {
        self.display = display
        self.directory = directory
        self.xauthority = xauthority
        self.passwordFile = passwordFile
        self.rfbSocket = rfbSocket
        self.geometry = geometry
        self.depth = depth
        self.title = title
        self.exposure = exposure
        self.tlsFiles = tlsFiles
        self.policy = policy
    }

    /// The TCP port RFB listens on when `exposure` asks for TCP.
    public var rfbPort: Int { display.rfbPort(base: exposure.portBase) }
}

/// What the admin's settings ask of every desktop's server, wherever it runs.
public struct DisplayServerPolicy: Sendable, Equatable {
    /// Ends the desktop after this long without a viewer (sessions.xvnc_max_idle).
    public var maxIdleSeconds: Int?
    /// Ends it this long after its last viewer left (sessions.xvnc_max_disconnection).
    public var maxDisconnectionSeconds: Int?
    /// Whether the desktop's clipboard may reach viewers. The gateway can drop cut text on its
    /// way from a browser, but the server's own travels among framebuffer updates: only the
    /// server can keep it from the browser (and so from every viewer).
    public var sendsCutText: Bool

    public init(maxIdleSeconds: Int? = nil, maxDisconnectionSeconds: Int? = nil, sendsCutText: Bool = true) {
        self.maxIdleSeconds = maxIdleSeconds
        self.maxDisconnectionSeconds = maxDisconnectionSeconds
        self.sendsCutText = sendsCutText
    }
}
