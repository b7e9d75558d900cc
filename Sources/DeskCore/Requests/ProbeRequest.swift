/// `probe`: a real RFB handshake with a session's Xvnc, given up after `timeoutSeconds`.
public struct ProbeRequest: ControlVerb {
    public static let command = Command.probe
    public static let defaultTimeoutSeconds = 3
    /// What a probe may wait: a longer one would hold a connection of the caller's for nothing.
    public static let timeoutRange = 1...30
    public var display: Display
    public var timeoutSeconds: Int

    public init(display: Display, timeoutSeconds: Int = ProbeRequest.defaultTimeoutSeconds) {
        self.display = display
        self.timeoutSeconds = timeoutSeconds
    }

    /// The timeout travels in `idleSeconds` (version 1 of the protocol has no field of its own
    /// for it); out of range, it is brought into it rather than refused.
    public init(wire: Request) throws(DeskError) {
        let timeout = wire.idleSeconds ?? Self.defaultTimeoutSeconds
        self.init(display: try wire.requiredDisplay(),
                  timeoutSeconds: min(max(timeout, Self.timeoutRange.lowerBound), Self.timeoutRange.upperBound))
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
        wire.idleSeconds = timeoutSeconds
    }
}
