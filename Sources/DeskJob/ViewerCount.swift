import DeskLinux
import Glibc

/// How many viewers the desktop has: the gateway's relays joined to Xvnc, plus viewers
/// connected straight to Xvnc's socket on the node (a user's `ssh -L PORT:SOCKET node`), which
/// the kernel's socket table shows: Xvnc's accepted connections carry the socket's path.
struct ViewerCount {
    let socketPath: String
    let xvnc: pid_t

    /// Checked this often besides whenever a relay begins or ends (a tunnel's viewer comes and
    /// goes without the job hearing of it).
    static let interval: Duration = .seconds(2)

    func take(relays: RelayBoard) -> Int {
        let joined = relays.joined
        let accepted = ProcFS.unixSockets(states: [ProcFS.UnixSocket.established], named: [socketPath]).filter { $0.name == socketPath }
        guard !accepted.isEmpty else { return joined.count }
        // A name is not proof (a socket of the same path in another mount namespace would
        // match): only connections Xvnc itself holds are its viewers. A relay's own connection
        // is one of them, already counted as a relay.
        let own = ProcFS.socketInodes(of: xvnc)
        let tunnelled = accepted.filter { own.contains($0.inode) && !joined.inodes.contains($0.peer) }.count
        return joined.count + tunnelled
    }
}
