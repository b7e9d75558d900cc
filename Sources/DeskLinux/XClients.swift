import CDeskShims
import DeskCore
import Glibc

/// Which processes of a session hold a connection to its X display: how deskd knows a desktop
/// has reached its display, whichever of its processes got there (a launcher that forks, a
/// shell whose child opens the display, dbus-launch, a double fork).
///
/// The kernel recorded each client's pid and uid when it connected (SO_PEERCRED); deskd reads
/// them from Xvnc's accepted ends, copied with pidfd_getfd, so the cost is Xvnc's descriptors
/// and not every socket on the host. A client counts only if it is the session owner's and a
/// descendant of the session's deskd-session: that process is a child subreaper, so every
/// process the desktop starts, however it forks, stays below it. Another user connecting to the
/// display (and being refused for want of the cookie) is never taken for the desktop.
public enum XClients {
    /// How the census went: the session's clients, or why it could not be taken this way.
    public enum Census: Sendable, Equatable {
        case clients([pid_t])
        /// pidfd_getfd is refused here (an older kernel, a seccomp filter): the caller falls
        /// back to looking for the desktop's own connection.
        case unavailable
    }

    /// The session's X clients: peers of `xvnc`'s connections on display `display` that belong to
    /// `owner` and descend from `helper`. Xvnc's descriptors are the user's to multiply, so only
    /// the first 1024 are looked at, and at most 64 clients are named.
    public static func census(xvnc: pid_t, display: Display, owner: uid_t, helper: pid_t) -> Census {
        var peers = [deskd_peer](repeating: deskd_peer(), count: 64)
        let path = XSocketDirectory.path + "/X\(display.number)"
        let count = path.withCString { deskd_x_client_peers(xvnc, $0, &peers, Int32(peers.count), 1024) }
        if count < 0 { return errno == EPERM || errno == ENOSYS ? .unavailable : .clients([]) }
        var seen = Set<pid_t>()
        let clients = peers[0..<Int(count)].compactMap { peer -> pid_t? in
            guard peer.uid == owner, peer.pid != xvnc, seen.insert(peer.pid).inserted,
                  descends(peer.pid, from: helper) else { return nil }
            return peer.pid
        }
        return .clients(clients)
    }

    /// Whether `pid` is below `ancestor`, following parents up to 64 generations (a desktop's
    /// tree is a handful deep; a user's chain of forks is not followed for ever).
    static func descends(_ pid: pid_t, from ancestor: pid_t) -> Bool {
        guard ancestor > 1 else { return false }
        var current = pid
        for _ in 0..<64 {
            guard let process = ProcFS.process(current), process.state != "Z" else { return false }
            if process.parent == ancestor { return true }
            guard process.parent > 1 else { return false }
            current = process.parent
        }
        return false
    }
}
