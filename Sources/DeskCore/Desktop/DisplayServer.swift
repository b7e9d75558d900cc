/// The program a desktop draws on, which serves its screen to viewers in RFB: Xvnc, or a Wayland
/// compositor with wayvnc. deskd's local sessions and a cluster desktop's job on its node start
/// theirs from the same description (`commandLine`), and everything that differs between kinds
/// is asked of the server's type here: admission, bring-up, teardown, the cluster job, the web
/// front and deskctl ask the server, never which kind it is. A third kind is a new conformance,
/// its case in `DisplayServerKind`, its template and its tests.
///
/// Readiness is the same for every kind: the server answers a real RFB greeting on its endpoint
/// (RFBHandshake, from the pid that was started), then a process of the desktop holds a
/// connection to the server (XClients: the desktop's first client).
public protocol DisplayServer: Sendable {
    /// Which kind it is, as a session's record stores it.
    static var kind: DisplayServerKind { get }
    /// How a viewer gets in: the session's VNC password, or the owner's socket alone.
    static var viewerAccess: ViewerAccess { get }
    /// The program viewers talk to, for sentences and `deskctl list` ("Xvnc", "wayvnc").
    static var viewerProgram: String { get }
    /// Whether it runs a user's own ~/.vnc/xstartup (an X session's script) where deskd.toml
    /// says so; a Wayland desktop always runs its template's.
    static var runsUsersXstartup: Bool { get }
    /// Whether it is an X server on the display it is given: its clients need the session's X
    /// authority, and where displays are chosen on the spot (a cluster node), it is started on
    /// the lowest free one and the next when another server takes that one first. A Wayland
    /// compositor's Xwayland picks its own.
    static var ownsXDisplay: Bool { get }
    /// Whether the browser gateway must read what the server sends (not only pass it on), to
    /// keep what a browser could misread or a view-only viewer may not have from it.
    static var relayReadsServerMessages: Bool { get }
    /// Where the desktop's programs connect to it, for display `display` of `uid`, with the
    /// session's private directory `directory`.
    static func clientSocket(display: Display, uid: UInt32, directory: String) -> DisplayClientSocket
    /// Refuses a size the server cannot serve well, with the nearest sizes that work.
    static func check(_ geometry: Geometry) throws(DeskError)
    /// A file in the private directory that says what the server may leave behind when it does
    /// not end cleanly (nil: nothing), and the X displays whose stale locks of the owner's that
    /// file names (Xwayland's, chosen by a compositor).
    static var leftoverRecord: String? { get }
    static func leftoverDisplays(recorded text: String) -> [Display]

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
    /// Refuses a start on a host without the server's own program, saying what to install
    /// (a Wayland desktop's programs are its template's `needs:` line to check).
    func checkInstalled(isExecutable: (String) -> Bool) throws(DeskError)
}

/// How a viewer gets into a desktop.
public enum ViewerAccess: Sendable, Equatable {
    /// The session's VNC password (VncAuth), which deskd generates and hands out; a view-only
    /// one besides.
    case password
    /// Security type None on the session's socket, which only its owner and root can reach:
    /// there is no password to generate, give or change.
    case ownersSocket
}

extension DisplayServer {
    public static func check(_ geometry: Geometry) throws(DeskError) {}
    public static var leftoverRecord: String? { nil }
    public static func leftoverDisplays(recorded text: String) -> [Display] { [] }
    public func displayWasTaken(log: [String]) -> Bool { false }
    public func checkInstalled(isExecutable: (String) -> Bool) throws(DeskError) {}
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

/// Which kind of display server a desktop has, as a session's record and its JSON say it:
/// the one stored kind. Everything else is the server type's to say (`server`).
public enum DisplayServerKind: String, Sendable, Codable, Equatable, CaseIterable {
    case xvnc
    case wayland

    /// The type that knows what differs.
    public var server: any DisplayServer.Type {
        switch self {
        case .xvnc: Xvnc.self
        case .wayland: WaylandVNC.self
        }
    }
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

extension XstartupTemplate {
    /// The compositor a Wayland desktop's template names (`# compositor: sway`); nil for a
    /// desktop that runs in Xvnc.
    public var compositor: WaylandVNC.Compositor? {
        headerValue("compositor").flatMap { WaylandVNC.Compositor(rawValue: $0) }
    }

    /// The server this template's desktop draws on: a Wayland compositor with wayvnc where its
    /// header names one (`# compositor: sway`), else Xvnc at `xvnc`. The one place a server is
    /// made from a template (a cluster job makes its own from its spec, `JobSpec.displayServer`).
    public func displayServer(xvnc: String) -> any DisplayServer {
        compositor.map { WaylandVNC(compositor: $0) } ?? Xvnc(executable: xvnc)
    }

    /// Which kind of server it draws on.
    public var displayServerKind: DisplayServerKind { type(of: displayServer(xvnc: "")).kind }
}
