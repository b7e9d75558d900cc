import Glibc

/// The kernel's word on who is at the other end of a Unix socket (SO_PEERCRED).
public struct PeerCredentials: Sendable, Equatable {
    public let pid: pid_t
    public let uid: uid_t
    public let gid: gid_t

    /// Glibc hides `struct ucred` behind _GNU_SOURCE; this has the same layout.
    /// Public so the control server can read it through NIO's socket-option API.
    public struct UCred: Sendable {
        public var pid: pid_t = 0
        public var uid: uid_t = 0
        public var gid: gid_t = 0
    }

    public init(_ cred: UCred) {
        self.init(pid: cred.pid, uid: cred.uid, gid: cred.gid)
    }

    public init(pid: pid_t, uid: uid_t, gid: gid_t) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public init(socket fd: Int32) throws(OSError) {
        var cred = UCred()
        var length = socklen_t(MemoryLayout<UCred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 else {
            throw OSError("getsockopt(SO_PEERCRED)")
        }
        self.init(cred)
    }
}
