import DeskCore
import Glibc

/// Which processes of a session hold a connection to its X display: how deskd knows a desktop
/// has reached its display, whichever of its processes got there (a launcher that forks, a
/// shell whose child opens the display, dbus-launch, a double fork).
///
/// Everything comes from tables the kernel keeps, never from the user's descriptors
/// themselves: sock_diag names the connections Xvnc accepted on the display's socket (an
/// accepted end carries its listener's name) and their peers, and the candidates' /proc/PID/fd
/// links say which of them holds a peer (readlink only: nothing of the user's is opened,
/// copied or closed, so a user's FUSE file or lingering socket can never stall root).
/// Candidates are the session's own processes (its cgroup): another user connecting to the
/// display, refused for want of the cookie, is never taken for the desktop.
public enum XClients {
    /// The candidates that hold a connection to the display server `server` on `socket`: its X
    /// display, or (a Wayland desktop) the compositor's sockets in the private directory; nil
    /// when the kernel could not be asked (the caller neither starts nor ends anything on that).
    /// The server's and each candidate's descriptors are the user's to multiply: at most 1,024
    /// of each are read.
    public static func holders(among candidates: [pid_t], server: pid_t, socket: DisplayClientSocket) -> [pid_t]? {
        clientEnds(of: server, socket: socket).map { holders(among: candidates, of: $0, xvnc: server) }
    }

    /// The client ends of every connection accepted on `socket`; for an X display, only those
    /// `server` accepted.
    public static func clientEnds(of server: pid_t, socket: DisplayClientSocket) -> Set<UInt64>? {
        switch socket {
        case .x11(let display):
            return clientEnds(of: server, display: display)
        case .inOwnersDirectories(let prefixes):
            // Only the owner can bind in their 0700 directories: whichever of their processes
            // accepted the connection (the compositor, a child of the launcher), it is theirs.
            guard let accepted = ProcFS.unixSocketsIfAvailable(states: [ProcFS.UnixSocket.established], named: prefixes) else { return nil }
            return Set(accepted.filter { socket in prefixes.contains { socket.name.hasPrefix($0) } }.map(\.peer))
        }
    }

    /// The candidates that hold one of `ends` (`clientEnds`, read already).
    public static func holders(among candidates: [pid_t], of ends: Set<UInt64>, xvnc: pid_t) -> [pid_t] {
        guard !ends.isEmpty else { return [] }
        return candidates.filter { $0 != xvnc && ProcFS.holdsSocket(of: $0, among: ends, scanning: 1024) }
    }

    /// The inodes of the client ends of every X connection `xvnc` has accepted on display
    /// `display` (empty: none yet); nil when the kernel could not be asked.
    public static func clientEnds(of xvnc: pid_t, display: Display) -> Set<UInt64>? {
        let path = XSocketDirectory.path + "/X\(display.number)"
        guard let accepted = ProcFS.unixSocketsIfAvailable(states: [ProcFS.UnixSocket.established], named: [path, "@" + path]) else { return nil }
        let ends = accepted.filter { $0.name == path || $0.name == "@" + path }
        guard !ends.isEmpty else { return [] }
        let servers = ProcFS.socketInodes(of: xvnc, scanning: 1024)
        return Set(ends.filter { servers.contains($0.inode) }.map(\.peer))
    }
}
