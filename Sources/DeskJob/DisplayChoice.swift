import DeskCore
import DeskLinux
import Glibc

/// Xvnc's display on the node: the lowest one no X server holds. Another job's Xvnc (anyone's)
/// can take it between this look and Xvnc's own lock, so a start that fails because the display
/// was taken tries the next one (`Xvnc.displayWasTaken`).
enum DisplayChoice {
    /// Plenty for one node's desktops; the RFB port is not derived from it (there is none).
    static let range = 1...999

    static func lowestFree(skipping tried: Set<Int>) -> Display? {
        // Linux X servers also listen on an abstract socket of the same name, which no file
        // shows: one there means a server whose /tmp is another (a container's, a namespace's).
        let abstract = ProcFS.listeningUnixSocketPaths(prefixes: ["@/tmp/.X11-unix/X"])
        for number in range where !tried.contains(number) {
            let display = Display(number)
            if exists(display.lockPath) || exists(display.socketPath) || abstract.contains("@" + display.socketPath) { continue }
            return display
        }
        return nil
    }

    /// Every X server's socket goes in /tmp/.X11-unix. On the login node deskd makes it root's,
    /// mode 1777; here the job is the user and cannot, and a missing one would be made by this
    /// user's Xvnc, owned by them, who could then remove or replace every later user's X socket
    /// on the node. So it must already be root's and sticky, or the desktop does not start.
    static func checkSocketDirectory(node: String) throws(JobFailure) {
        let path = XSocketDirectory.path
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw JobFailure("\(path) is missing on \(node): the node's administrator must make it (root's, mode 1777, as systemd's tmpfiles does at boot); an X server started by a user would make it that user's.")
        }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == 0, info.st_mode & 0o1002 == 0o1002 else {
            throw JobFailure("\(path) on \(node) is not root's sticky directory for every user's X sockets: the node's administrator must make it root's, mode 1777.")
        }
    }

    /// Anything at the path counts, a symlink or a stale lock included: neither can be cleared
    /// by this user when another made it, and Xvnc would refuse the display.
    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 || errno != ENOENT
    }
}
