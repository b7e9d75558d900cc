import DeskCore
import DeskLinux
import Glibc

/// Who is watching each session, and whether its Xvnc runs, as the kernel tells it: one
/// sock_diag dump for all sessions (a viewer is an established connection to the session's RFB
/// socket, which an accepted Unix connection names, or to its TCP port) and the Xvnc's state in
/// /proc. Blocking work for a thread of its own: the daemon's actor only applies the answer.
public enum ViewerCensus {
    /// What the census needs to know of one session.
    public struct Subject: Sendable {
        public let sessionID: String
        public let xvnc: pid_t
        public let endpoint: RFBEndpoint

        public init(sessionID: String, xvnc: pid_t, endpoint: RFBEndpoint) {
            self.sessionID = sessionID
            self.xvnc = xvnc
            self.endpoint = endpoint
        }
    }

    public struct Count: Sendable, Equatable {
        public let viewers: Int
        /// Xvnc is stopped (SIGSTOP, or traced): it answers nobody. nil when the census did not
        /// look (a census for a reader, see `take`).
        public let xvncStopped: Bool?

        public init(viewers: Int, xvncStopped: Bool?) {
            self.viewers = viewers
            self.xvncStopped = xvncStopped
        }
    }

    /// Counts by session id. `socketDirectory` is where every session's socket lives: the dump
    /// keeps only names under it, and only the sessions' ports, so another user's hundred
    /// thousand sockets cost a look in the kernel each, never an entry here.
    ///
    /// `health`: also read each Xvnc's state in /proc, a file open and a `do_task_stat` per
    /// session, most of what a census of two hundred costs. The monitor's census each second
    /// does; the one a `list` takes counts viewers only, and the health it shows is at most a
    /// second old.
    public static func take(_ subjects: [Subject], socketDirectory: String, health: Bool = true) -> [String: Count] {
        var candidates: [String: [UInt64]] = [:]
        let paths = subjects.compactMap { subject -> String? in
            if case .unixSocket(let path) = subject.endpoint { return path }
            return nil
        }
        if !paths.isEmpty {
            let prefix = socketDirectory.hasSuffix("/") ? socketDirectory : socketDirectory + "/"
            for socket in ProcFS.unixSockets(states: [ProcFS.UnixSocket.established], named: [prefix]) {
                candidates[socket.name, default: []].append(socket.inode)
            }
        }
        let ports = subjects.compactMap { subject -> Int? in
            if case .tcp(let port) = subject.endpoint { return port }
            return nil
        }
        if let low = ports.min(), let high = ports.max() {
            for socket in ProcFS.tcpSockets(states: [ProcFS.TCPSocket.established], localPorts: low...high) {
                candidates["tcp:\(socket.localPort)", default: []].append(socket.inode)
            }
        }
        var counts: [String: Count] = [:]
        for subject in subjects {
            let key: String = switch subject.endpoint {
            case .unixSocket(let path): path
            case .tcp(let port): "tcp:\(port)"
            }
            // A name or a port is not proof: a socket bound to the same path in another mount
            // namespace, or an outgoing connection from the same local port, would count. Only
            // connections Xvnc itself holds are viewers (read only when there is a candidate).
            let found = candidates[key] ?? []
            let viewers = found.isEmpty ? 0 : ProcFS.socketInodes(of: subject.xvnc).intersection(found).count
            let stopped = health ? ProcFS.process(subject.xvnc).map { $0.state == "T" || $0.state == "t" } ?? false : nil
            counts[subject.sessionID] = Count(viewers: viewers, xvncStopped: stopped)
        }
        return counts
    }
}
