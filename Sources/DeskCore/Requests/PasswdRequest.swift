/// `passwd`: a new password for a session, full or (`viewOnly`) view-only.
public struct PasswdRequest: ControlVerb {
    public static let command = Command.passwd
    public var display: Display
    /// A new view-only password; the full one is kept.
    public var viewOnly: Bool

    public init(display: Display, viewOnly: Bool = false) {
        self.display = display
        self.viewOnly = viewOnly
    }

    public init(wire: Request) throws(DeskError) {
        self.init(display: try wire.requiredDisplay(), viewOnly: wire.viewOnly ?? false)
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
        wire.viewOnly = viewOnly ? true : nil
    }
}
