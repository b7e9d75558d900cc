import FoundationEssentials

/// What a watch found: the changes' count (nil: nothing new in time), whether the login is
/// alive, and whose login it is.
public struct WatchAnswer: Sendable, Equatable {
    public var generation: UInt64?
    public var loggedIn: Bool
    public var account: UInt32?

    public init(generation: UInt64?, loggedIn: Bool, account: UInt32? = nil) {
        self.generation = generation
        self.loggedIn = loggedIn
        self.account = account
    }
}
