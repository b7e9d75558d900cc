import DeskLinux
import Glibc

/// Who listens on a TCP port deskd wanted: for the one sentence that says why the gateway or
/// the metrics endpoint could not listen ("port 8443 is held by uid 1001 (mallory)").
public struct PortHolder: Sendable, Equatable, CustomStringConvertible {
    public let uid: uid_t
    /// The account's name, where NSS knows the uid.
    public let name: String?

    public init(uid: uid_t, name: String?) {
        self.uid = uid
        self.name = name
    }

    /// The owner of a listening socket on `port` (any address, IPv4 or IPv6), as sock_diag (or
    /// /proc/net/tcp) reports it; nil when none listens there, so the bind failed for another
    /// reason (an address this host does not have, say).
    public static func of(port: Int) -> PortHolder? {
        guard (1...65535).contains(port),
              let socket = ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen], localPorts: port...port).first else { return nil }
        return PortHolder(uid: socket.uid, name: UserAccount.withUID(socket.uid)?.name)
    }

    public var description: String { "uid \(uid)" + (name.map { " (\($0))" } ?? "") }
}
