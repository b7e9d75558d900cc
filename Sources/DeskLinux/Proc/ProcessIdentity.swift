import Glibc

/// What tells a process from a later one that got the same pid.
public struct ProcessIdentity: Sendable, Equatable {
    public var startTicks: UInt64
    public var uid: uid_t?
    public var executable: String?

    public init(startTicks: UInt64, uid: uid_t?, executable: String?) {
        self.startTicks = startTicks
        self.uid = uid
        self.executable = executable
    }
}
