import FoundationEssentials

/// A display occupied by something deskd did not start (an Xvfb, a hand-started vncserver).
public struct ForeignDisplay: Codable, Sendable, Equatable {
    public var display: Display
    public var reason: String
    public var pid: Int32?

    public init(display: Display, reason: String, pid: Int32?) {
        self.display = display
        self.reason = reason
        self.pid = pid
    }
}
