/// One process of a session (its display server or the desktop): the end of its output and how
/// it ended.
public struct ProcessLog: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable, CaseIterable {
        /// Xvnc, or a compositor with wayvnc (`xvnc` before there was another, still read).
        case server
        case desktop

        /// The server's word before it was `server`: in a deskd of before's JSON, and in the
        /// files of a session whose deskd-session a deskd of before started.
        public static let formerServerWord = "xvnc"

        public init(from decoder: any Decoder) throws {
            let word = try decoder.singleValueContainer().decode(String.self)
            guard let role = word == Self.formerServerWord ? .server : Role(rawValue: word) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(word)' is no process role"))
            }
            self = role
        }
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
