/// `kill`: which sessions to end.
public enum KillRequest: ControlVerb {
    public static let command = Command.kill
    case display(Display)
    /// Every session of this account.
    case user(String)
    /// Every session the caller may kill.
    case all

    public init(wire: Request) throws(DeskError) {
        if let display = wire.display {
            self = .display(try display.checked())
        } else if let name = wire.user {
            self = .user(name)
        } else if wire.all == true {
            self = .all
        } else {
            throw DeskError(.badRequest, "say which sessions to kill: a display (:N), --user NAME or --all.")
        }
    }

    public func fill(_ wire: inout Request) {
        switch self {
        case .display(let display): wire.display = display
        case .user(let name): wire.user = name
        case .all: wire.all = true
        }
    }
}
