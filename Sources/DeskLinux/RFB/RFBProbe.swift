/// What a probe's RFB session found.
public struct RFBProbe: Sendable, Equatable {
    public var protocolVersion: String
    public var desktopName: String?
    public var width: Int?
    public var height: Int?
    public var roundTrip: Duration

    public init(protocolVersion: String, desktopName: String? = nil, width: Int? = nil, height: Int? = nil, roundTrip: Duration) {
        self.protocolVersion = protocolVersion
        self.desktopName = desktopName
        self.width = width
        self.height = height
        self.roundTrip = roundTrip
    }
}
