import DeskCore
import DeskLinux
import Glibc

/// The environment of the session's processes, made from the account rather than passed on:
/// deskd submits with --export=NONE, and Slurm's own variables would tell a desktop about a
/// batch step it is not. Every process carries the session's marker (DESKD_SESSION), which is
/// how the end finds one that escaped the job's process tree.
struct DesktopEnvironment {
    let account: UserAccount
    let sessionID: String
    /// What the job itself was given and the desktop keeps: LANG (else C.UTF-8) and SLURM_JOB_ID.
    let language: String
    let slurmJobID: String?
    /// The login's runtime directory on the node: the job's own XDG_RUNTIME_DIR (pam_systemd in
    /// Slurm's PAM stack made it for the job, so it lasts as long as the job), where it is a
    /// directory of the job's user that no one else may enter. Not /run/user/UID found by itself:
    /// another login's of the user (an ssh session to the node) would take it away when it ends.
    /// nil where the job has none, and a Wayland desktop then keeps its private directory, as
    /// deskd's local desktops do.
    let runtimeDirectory: String?

    static let path = "/usr/local/bin:/usr/bin:/bin"

    init(account: UserAccount, sessionID: String) {
        self.account = account
        self.sessionID = sessionID
        self.language = Self.variable("LANG").flatMap { $0.isEmpty ? nil : $0 } ?? "C.UTF-8"
        self.slurmJobID = Self.variable("SLURM_JOB_ID")
        self.runtimeDirectory = Self.variable("XDG_RUNTIME_DIR").flatMap { Self.isPrivateDirectory($0) ? $0 : nil }
    }

    /// A directory (not a link to one) of this process's user, closed to everyone else.
    static func isPrivateDirectory(_ path: String) -> Bool {
        var status = stat()
        guard path.hasPrefix("/"), lstat(path, &status) == 0 else { return false }
        return status.st_mode & S_IFMT == S_IFDIR && status.st_uid == getuid() && status.st_mode & 0o077 == 0
    }

    static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Xvnc's: the account and the marker; no display of its own to find.
    var server: [String] {
        var entries = [
            "HOME=\(account.home)", "USER=\(account.name)", "LOGNAME=\(account.name)", "SHELL=\(account.shell)",
            "PATH=\(Self.path)", "LANG=\(language)", "\(ProcessSweep.markerKey)=\(sessionID)",
        ]
        if let slurmJobID { entries.append("SLURM_JOB_ID=\(slurmJobID)") }
        return entries
    }

    /// What the display server itself is started with: the above, and what the server asks for
    /// its clients (a Wayland compositor's XDG_RUNTIME_DIR, where it makes its sockets and its
    /// programs find the user bus), with the login's runtime directory first.
    func server(of displayServer: some DisplayServer, _ needs: DisplayServerNeeds) -> [String] {
        // A Wayland compositor's own (deskd-session's rule: the login's wins over the server's).
        var variables = displayServer.clientEnvironment(needs).filter { $0.key == "XDG_RUNTIME_DIR" }
        if let runtimeDirectory, !variables.isEmpty { variables["XDG_RUNTIME_DIR"] = runtimeDirectory }
        return server + variables.map { "\($0.key)=\($0.value)" }
    }

    /// The desktop's, and any client the job starts on it (the time warning): the server's,
    /// with what reaches the display server (for Xvnc, the display and the cookie that opens it)
    /// and the login's runtime directory where the node has one, as deskd-session gives PAM's.
    func client(of displayServer: some DisplayServer, _ needs: DisplayServerNeeds) -> [String] {
        var variables = displayServer.clientEnvironment(needs)
        if let runtimeDirectory { variables["XDG_RUNTIME_DIR"] = runtimeDirectory }
        // XDG_SESSION_TYPE as deskd-session sets it for a desktop on the login node, so that
        // one template behaves the same on both.
        return server + variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            + ["XDG_SESSION_TYPE=\(displayServer.sessionType)"]
    }

    /// `name` in the desktop's PATH, if it is there and executable.
    static func find(_ name: String) -> String? {
        path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }
}
