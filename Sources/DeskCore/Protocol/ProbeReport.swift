import FoundationEssentials

/// The result of an RFB handshake with a session's Xvnc.
public struct ProbeReport: Codable, Sendable, Equatable {
    public var display: Display
    /// false when the server did not complete the handshake within the timeout.
    public var answered: Bool
    public var protocolVersion: String?
    public var desktopName: String?
    public var width: Int?
    public var height: Int?
    /// From connecting to a completed framebuffer update, in milliseconds.
    public var roundTripMilliseconds: Double?

    public init(display: Display, answered: Bool, protocolVersion: String? = nil, desktopName: String? = nil,
                width: Int? = nil, height: Int? = nil, roundTripMilliseconds: Double? = nil) {
        self.display = display
        self.answered = answered
        self.protocolVersion = protocolVersion
        self.desktopName = desktopName
        self.width = width
        self.height = height
        self.roundTripMilliseconds = roundTripMilliseconds
    }
}
