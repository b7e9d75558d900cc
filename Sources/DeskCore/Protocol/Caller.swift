/// Who is asking, as the kernel told us (SO_PEERCRED) — never as the request claims.
public struct Caller: Sendable, Equatable {
    public let uid: UInt32
    public let gid: UInt32
    public let pid: Int32
    public let userName: String?
    /// Root, or a member of the configured admin group.
    public let isAdmin: Bool

    public init(uid: UInt32, gid: UInt32, pid: Int32, userName: String?, isAdmin: Bool) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.userName = userName
        self.isAdmin = isAdmin
    }
}
