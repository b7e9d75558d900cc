/// What deskd tells deskd-session on its stdin once the spec is read, one line each.
public enum SessionCommand: String, Sendable, Equatable, CaseIterable {
    /// Start the desktop (deskd says so once Xvnc has answered).
    case desktop
    /// End the session, as SIGTERM does.
    case stop

    /// The line as written to the pipe, newline included.
    public var encoded: [UInt8] { Array(rawValue.utf8) + [UInt8(ascii: "\n")] }

    /// The command a line (without its newline) says; nil for any other line.
    public init?(line: String) {
        self.init(rawValue: line)
    }
}
