/// `show`: one session, by its display.
public struct ShowRequest: ControlVerb {
    public static let command = Command.show
    public var display: Display

    public init(display: Display) {
        self.display = display
    }

    public init(wire: Request) throws(DeskError) {
        self.display = try wire.requiredDisplay()
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
    }
}
