import DeskCore
import FoundationEssentials

// What each verb of the service takes, checked once, where the wire request is decoded
// (`ControlHarness`): a display is a `Display` from there on, a geometry a `Geometry`.

struct StartOptions: Sendable, Equatable {
    /// The account to start for; nil: the caller's own.
    var user: String?
    var display: Display?
    var geometry: Geometry?
    var depth: Int?
    /// A valid desktop name; nil: the configured default.
    var desktop: String?

    init(user: String? = nil, display: Display? = nil, geometry: Geometry? = nil, depth: Int? = nil, desktop: String? = nil) {
        self.user = user
        self.display = display
        self.geometry = geometry
        self.depth = depth
        self.desktop = desktop
    }

    init(_ request: Request) throws(DeskError) {
        self.user = request.user
        self.display = try request.display.map { number throws(DeskError) in try Display(parsing: String(number)) }
        self.geometry = try request.geometry.map { text throws(DeskError) in try Geometry(parsing: text) }
        self.depth = try request.depth.map { depth throws(DeskError) in try ColorDepth.validate(depth) }
        self.desktop = try request.desktop.map { name throws(DeskError) in try XstartupTemplate.validate(desktopName: name) }
    }
}

enum KillTarget: Sendable, Equatable {
    case display(Display)
    /// Every session of this account.
    case user(String)
    /// Every session the caller may kill.
    case all

    init(_ request: Request) throws(DeskError) {
        if let number = request.display {
            self = .display(try Display(parsing: String(number)))
        } else if let name = request.user {
            self = .user(name)
        } else if request.all == true {
            self = .all
        } else {
            throw DeskError(.badRequest, "say which sessions to kill: a display (:N), --user NAME or --all.")
        }
    }
}

struct ReapOptions: Sendable, Equatable {
    var idleSeconds: Int
    /// Only this account's sessions.
    var user: String?
    /// Say what would be killed, kill nothing.
    var dryRun: Bool

    init(idleSeconds: Int, user: String? = nil, dryRun: Bool = false) {
        self.idleSeconds = idleSeconds
        self.user = user
        self.dryRun = dryRun
    }

    init(_ request: Request) throws(DeskError) {
        guard let idle = request.idleSeconds, idle > 0 else {
            throw DeskError(.invalidDuration, "reap needs an idle time, for example: deskctl reap --idle 2h.")
        }
        self.init(idleSeconds: idle, user: request.user, dryRun: request.dryRun ?? false)
    }
}

/// Whose logs: the session on a display (or the one that ended there last), or one by id.
enum LogsTarget: Sendable, Equatable {
    case display(Display)
    case session(String)

    init(_ request: Request) throws(DeskError) {
        if let number = request.display {
            self = .display(try Display(parsing: String(number)))
        } else if let id = request.session {
            guard SessionSummary.isSessionID(id) else {
                throw DeskError(.badRequest, "'\(id)' is not a session id (32 hex digits, as in deskctl show or history); or name a display such as :3.")
            }
            self = .session(id)
        } else {
            throw DeskError(.badRequest, "logs needs a display or a session id, for example: deskctl logs :3.")
        }
    }

    var description: String {
        switch self {
        case .display(let display): "display \(display)"
        case .session(let id): "session \(id)"
        }
    }
}

extension Request {
    /// The display a verb that needs one names, or the sentence saying how to name it.
    func requiredDisplay(for verb: Command) throws(DeskError) -> Display {
        guard let number = display else {
            throw DeskError(.badRequest, "\(verb.rawValue) needs a display, for example: deskctl \(verb.rawValue) :3.")
        }
        return try Display(parsing: String(number))
    }
}
