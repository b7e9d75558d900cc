/// `logs`: the end of a session's output and how its processes ended.
public struct LogsRequest: ControlVerb {
    public static let command = Command.logs

    /// Whose logs: the session on a display (or the one that ended there last), or one by id.
    public enum Target: Sendable, Equatable, CustomStringConvertible {
        case display(Display)
        case session(String)

        public var description: String {
            switch self {
            case .display(let display): "display \(display)"
            case .session(let id): "session \(id)"
            }
        }
    }

    public var target: Target
    /// The most lines of each process's output, within 1...SessionLogs.maxLines.
    public var lines: Int

    public init(target: Target, lines: Int = SessionLogs.defaultLines) {
        self.target = target
        self.lines = min(max(lines, 1), SessionLogs.maxLines)
    }

    public init(wire: Request) throws(DeskError) {
        let target: Target
        if let display = wire.display {
            target = .display(try display.checked())
        } else if let id = wire.session {
            guard SessionSummary.isSessionID(id) else {
                throw DeskError(.badRequest, "'\(id)' is not a session id (32 hex digits, as in deskctl show or history); or name a display such as :3.")
            }
            target = .session(id)
        } else {
            throw DeskError(.badRequest, "logs needs a display or a session id, for example: deskctl logs :3.")
        }
        self.init(target: target, lines: wire.lines ?? SessionLogs.defaultLines)
    }

    public func fill(_ wire: inout Request) {
        switch target {
        case .display(let display): wire.display = display
        case .session(let id): wire.session = id
        }
        wire.lines = lines
    }
}
