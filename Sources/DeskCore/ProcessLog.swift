/// One process of a session (Xvnc or the desktop): the end of its output and how it ended.
public struct ProcessLog: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable, CaseIterable {
        case xvnc, desktop
    }

    public var role: Role
    /// "exited with status 3" or "killed by signal 15 (Terminated)"; nil while it runs, or if it never started.
    public var exit: String?
    /// The last lines of its output, oldest first.
    public var lines: [String]
    /// Earlier lines exist and were left out.
    public var truncated: Bool

    public init(role: Role, exit: String?, lines: [String], truncated: Bool) {
        self.role = role
        self.exit = exit
        self.lines = lines
        self.truncated = truncated
    }
}
