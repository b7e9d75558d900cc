/// `list`: the caller's sessions, or (`all`, for admins) every user's and the foreign displays.
public struct ListRequest: ControlVerb {
    public static let command = Command.list
    public var all: Bool

    public init(all: Bool = false) {
        self.all = all
    }

    public init(wire: Request) throws(DeskError) {
        self.all = wire.all ?? false
    }

    public func fill(_ wire: inout Request) {
        wire.all = all ? true : nil
    }
}
