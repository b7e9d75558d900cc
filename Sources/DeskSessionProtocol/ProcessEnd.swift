import Glibc

/// How a session process ended, in the words deskd-session writes to its exit record and its
/// `exit` reply, and that `history` and `deskctl logs` show as they are.
public enum ProcessEnd: Sendable, Equatable, LosslessStringConvertible {
    /// "exited with status 3"
    case exited(status: Int32)
    /// "killed by signal 11 (Segmentation fault)"
    case killed(signal: Int32, name: String)
    /// "could not be started": the spawn failed, so there is no status.
    case notStarted

    /// The end `waitpid` reported as `status`.
    public init(waitStatus status: Int32) {
        let signal = status & 0x7F
        if signal == 0 {
            self = .exited(status: (status >> 8) & 0xFF)
        } else {
            self = .killed(signal: signal, name: strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)")
        }
    }

    private static let exitedPrefix = "exited with status "
    private static let killedPrefix = "killed by signal "
    private static let notStartedText = "could not be started"

    public var description: String {
        switch self {
        case .exited(let status): Self.exitedPrefix + String(status)
        case .killed(let signal, let name): Self.killedPrefix + "\(signal) (\(name))"
        case .notStarted: Self.notStartedText
        }
    }

    /// Reads back what `description` wrote; nil for anything else.
    public init?(_ description: String) {
        if description == Self.notStartedText {
            self = .notStarted
        } else if description.hasPrefix(Self.exitedPrefix) {
            guard let status = Int32(description.dropFirst(Self.exitedPrefix.count)) else { return nil }
            self = .exited(status: status)
        } else if description.hasPrefix(Self.killedPrefix) {
            let rest = description.dropFirst(Self.killedPrefix.count)
            guard let open = rest.firstIndex(of: " "), rest.hasSuffix(")"),
                  let signal = Int32(rest[..<open]), rest[rest.index(after: open)...].hasPrefix("(") else { return nil }
            self = .killed(signal: signal, name: String(rest[rest.index(open, offsetBy: 2)..<rest.index(before: rest.endIndex)]))
        } else {
            return nil
        }
    }
}
