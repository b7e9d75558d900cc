import DeskCore
import Glibc

/// The X server's own lock, `/tmp/.X<n>-lock`: its pid as ten characters and a newline.
///
/// Any user can create this file first, as anything: a FIFO (an open without O_NONBLOCK would
/// wait forever for a writer), a socket, a symlink to a file of root's, a file with a lease.
/// It is read only through `UntrustedFile`, and whatever is not an X server's regular lock
/// makes the display unusable, never deskd.
public enum XLockFile {
    public enum Status: Equatable {
        case absent
        case live(pid: pid_t)
        /// The pid is dead, the file is unreadable garbage no X server wrote, or it names a
        /// process that its owner does not run.
        case stale(pid: pid_t?)
        /// Not a lock an X server wrote: what it is, with its path, for a log line and `list --all`.
        case unusable(String)
    }

    /// An X server writes 11 bytes; anything much larger was not written by one.
    static let sizeLimit = 64

    public static func read(_ display: Display) -> Status {
        let bytes: [UInt8]
        let fileOwner: uid_t
        switch UntrustedFile.read(display.lockPath, limit: sizeLimit) {
        case .missing: return .absent
        case .refused(let why): return .unusable("\(display.lockPath) \(why)")
        case .contents(let contents, _, let owner):
            bytes = contents
            fileOwner = owner
        }
        // Xvnc ends its pid with a newline, wlroots (a compositor's Xwayland) with a NUL.
        let text = String(decoding: bytes, as: UTF8.self).trimming(where: { $0 == " " || $0 == "\n" || $0 == "\0" })
        // A regular file without a pid (a half-written lock, or planted garbage) is removed like a
        // stale one: unlinking a regular file in sticky /tmp harms no one.
        guard let pid = pid_t(text), pid > 0 else { return .stale(pid: nil) }
        // Like the X server: a pid we may not signal (EPERM) is alive.
        guard kill(pid, 0) == 0 || errno == EPERM, ProcFS.isAlive(pid) else { return .stale(pid: pid) }
        // An X server writes its own lock, so the file's owner runs the process it names (root's
        // is trusted: no one else can make one). A lock of Mallory's naming pid 1 is not a server's,
        // and is cleared like a stale one: otherwise 99 such files would stop every start.
        if fileOwner != 0, !ProcFS.uids(of: pid).contains(fileOwner) { return .stale(pid: pid) }
        return .live(pid: pid)
    }

    /// Removes a stale lock and the dead server's socket before a start. Both live in sticky
    /// /tmp, where only root or the owner may unlink; unlink never follows a symlink.
    public static func reclaim(_ display: Display) {
        guard case .stale = read(display) else { return }
        removeLockAndSocket(display)
    }

    /// After a session ends: removes the lock and socket only if the lock names `pid` (the
    /// session's own Xvnc) and that process is gone, so a newer X server on the same display,
    /// deskd's or anyone's, keeps its files.
    public static func release(_ display: Display, ownedBy pid: pid_t) {
        guard case .stale(let stale) = read(display), stale == pid else { return }
        removeLockAndSocket(display)
    }

    /// After a Wayland desktop ends: removes the lock (and socket) its compositor left for
    /// Xwayland, only if the file is `uid`'s (the desktop's owner wrote it) and the process it
    /// names is gone: a display number the owner could have written elsewhere touches no one
    /// else's lock, and nobody's live one.
    public static func reclaim(_ display: Display, ownedBy uid: uid_t) {
        guard case .contents(_, _, let owner) = UntrustedFile.read(display.lockPath, limit: sizeLimit), owner == uid,
              case .stale = read(display) else { return }
        removeLockAndSocket(display)
    }

    private static func removeLockAndSocket(_ display: Display) {
        unlink(display.lockPath)
        if !ProcFS.listeningUnixSocketPaths(prefixes: [display.socketPath]).contains(display.socketPath) {
            unlink(display.socketPath)
        }
    }
}
