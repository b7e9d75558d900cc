/// `probe`: a real RFB handshake with a session's Xvnc, given up after `timeoutSeconds`.
public struct ProbeRequest: ControlVerb {
    public static let command = Command.probe
    public static let defaultTimeoutSeconds = 3
    /// What a probe may wait: a longer one would hold a connection of the caller's for nothing.
    public static let timeoutRange = 1...30
    public var display: Display
    public var timeoutSeconds: Int

    /// A timeout out of `timeoutRange` is brought into it rather than refused.
    public init(display: Display, timeoutSeconds: Int = ProbeRequest.defaultTimeoutSeconds) {
        self.display = display
        self.timeoutSeconds = min(max(timeoutSeconds, Self.timeoutRange.lowerBound), Self.timeoutRange.upperBound)
    }

    /// The timeout travels in `idleSeconds` (version 1 of the protocol has no field of its own for it).
    public init(wire: Request) throws(DeskError) {
        self.init(display: try wire.requiredDisplay(), timeoutSeconds: wire.idleSeconds ?? Self.defaultTimeoutSeconds)
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
        wire.idleSeconds = timeoutSeconds
    }
}
