import Glibc

/// What deskd tells deskd-session about the desktop to run, on its stdin before anything
/// starts: NUL-separated key and value pairs, ended by the key `start`. Nothing secret travels
/// here (the VNC password is in a file of the user's), and nothing here is taken from argv,
/// which every user can read in /proc.
public struct SessionSpec: Sendable, Equatable {
    public var user: String
    public var uid: uid_t
    public var gid: gid_t
    public var home: String
    /// The X display, ":7".
    public var display: String
    public var sessionID: String
    /// Root's directory for this session's logs and exit statuses, under deskd's state directory.
    public var logDirectory: String
    /// The most bytes each process's log keeps.
    public var logLimit: Int
    /// Also copy each output line to stderr (the journal, when deskd runs under systemd).
    public var journal: Bool
    /// The session's cgroup, where every user process is created.
    public var cgroup: String?
    /// The display server's argv.
    public var server: [String]
    public var serverUmask: mode_t
    /// The desktop's argv.
    public var desktop: [String]
    /// What XDG_SESSION_TYPE says, to PAM (pam_systemd) and the desktop: "x11" or "wayland".
    public var sessionType: String
    /// The session's variables as `KEY=VALUE`.
    public var environment: [String]
    /// The spec came from a deskd of before the display server's role was `server` (its keys
    /// `xvnc` and `xvnc-umask`): an upgrade is under way, the old deskd still runs and reads only
    /// the former words, so deskd-session answers in those (`SessionReply.line(former:)`) and
    /// names its files so (`ProcessRole.word(former:)`).
    public var speaksFormerWords = false
    /// The session's own X socket directory, mounted on /tmp/.X11-unix in the session's mount
    /// namespace (deskd-session's PrivateXSockets); nil runs the session in the host's.
    public var xSocketDirectory: String?

    /// The longest field either side accepts: more is a mistake or an attack, not a desktop.
    public static let fieldLimit = 1 << 16

    /// The key after the last pair; what follows it on the stream are commands.
    static let terminator = "start"

    /// The keys, as they travel.
    enum Key: String {
        case user, uid, gid, home, display
        case sessionID = "session-id"
        case logDirectory = "log-directory"
        case logLimit = "log-limit"
        case journal, cgroup, server
        case serverUmask = "server-umask"
        /// `server` and `server-umask`, as a deskd of before wrote them.
        case formerServer = "xvnc"
        case formerServerUmask = "xvnc-umask"
        case desktop
        case sessionType = "session-type"
        case environment = "env"
        case xSocketDirectory = "x-socket-directory"
    }

    /// Why a spec could not be encoded or decoded.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The stream ended before `start`.
        case incomplete
        /// A phrase saying what is wrong ("an unknown key 'x'").
        case bad(String)

        /// A field over `fieldLimit`, refused on either side.
        static let overlong = Failure.bad("a field longer than 64 KiB")

        public var description: String {
            switch self {
            case .incomplete: "no complete spec"
            case .bad(let what): what
            }
        }
    }

    public init(user: String = "", uid: uid_t = 0, gid: gid_t = 0, home: String = "/", display: String = "", sessionID: String = "",
                logDirectory: String = "", logLimit: Int = 1 << 20, journal: Bool = false, cgroup: String? = nil, server: [String] = [],
                serverUmask: mode_t = 0o077, desktop: [String] = [], sessionType: String = "x11", xSocketDirectory: String? = nil,
                environment: [String] = []) {
        self.user = user
        self.uid = uid
        self.gid = gid
        self.home = home
        self.display = display
        self.sessionID = sessionID
        self.logDirectory = logDirectory
        self.logLimit = logLimit
        self.journal = journal
        self.cgroup = cgroup
        self.server = server
        self.serverUmask = serverUmask
        self.desktop = desktop
        self.sessionType = sessionType
        self.environment = environment
        self.xSocketDirectory = xSocketDirectory
    }
}
