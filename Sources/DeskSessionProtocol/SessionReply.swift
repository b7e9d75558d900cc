import Glibc

/// What deskd-session tells deskd on its stdout, one line each, as things happen: `ok` once
/// the PAM session is open, then `server PID` (or `refused STATUS SENTENCE`, `failed SENTENCE`, `taken SENTENCE`), `desktop PID`
/// when deskd asked for it, and `exit ROLE HOW` as each session process ends.
public enum SessionReply: Sendable, Equatable {
    /// The login is open; the display server comes next.
    case ok
    /// The display server's pid.
    case server(pid_t)
    /// The account stack refused the login: PAM's status and a sentence for the caller.
    case refused(PAMRefusal)
    /// Anything else went wrong: a sentence for the caller.
    case failed(String)
    /// Another process holds the display (its X socket's name): deskd tries the next display.
    case taken(String)
    case desktop(pid_t)
    case exit(ProcessRole, ProcessEnd)

    private enum Word: String {
        case ok, server, refused, failed, taken, desktop, exit
        /// `server`, as a deskd-session from before said it (ProcessRole).
        case xvnc
    }

    /// The line without its newline. A newline inside a sentence becomes a space, since it
    /// would end the line early.
    public var line: String { line(former: false) }

    /// The line, in the former words (`xvnc`) for a deskd that reads only those.
    public func line(former: Bool) -> String {
        switch self {
        case .ok: Self.line(.ok)
        case .server(let pid): Self.line(former ? .xvnc : .server, String(pid))
        case .refused(let refusal): Self.line(.refused, String(refusal.status) + " " + refusal.sentence)
        case .failed(let sentence): Self.line(.failed, sentence)
        case .taken(let sentence): Self.line(.taken, sentence)
        case .desktop(let pid): Self.line(.desktop, String(pid))
        case .exit(let role, let end): Self.line(.exit, role.word(former: former) + " " + end.description)
        }
    }

    /// The line as written to the pipe, newline included.
    public var encoded: [UInt8] { encoded(former: false) }

    public func encoded(former: Bool) -> [UInt8] { Array(line(former: former).utf8) + [UInt8(ascii: "\n")] }

    /// The reply a line (without its newline) says; nil for a line no deskd-session writes.
    public init?(line: String) {
        let (first, rest) = Self.split(line)
        guard let word = Word(rawValue: first) else { return nil }
        switch word {
        case .ok:
            guard rest.isEmpty else { return nil }
            self = .ok
        case .server, .xvnc:
            guard let pid = pid_t(rest), pid > 0 else { return nil }
            self = .server(pid)
        case .refused:
            let (status, sentence) = Self.split(rest)
            guard let status = Int32(status) else { return nil }
            self = .refused(PAMRefusal(status: status, sentence: sentence))
        case .failed: self = .failed(rest)
        case .taken: self = .taken(rest)
        case .desktop:
            guard let pid = pid_t(rest), pid > 0 else { return nil }
            self = .desktop(pid)
        case .exit:
            let (role, how) = Self.split(rest)
            guard let role = ProcessRole(word: role), let end = ProcessEnd(how) else { return nil }
            self = .exit(role, end)
        }
    }

    private static func line(_ word: Word, _ text: String = "") -> String {
        text.isEmpty ? word.rawValue : word.rawValue + " " + text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " ")
    }

    /// The first word and the rest, without the space between them.
    private static func split(_ line: String) -> (String, String) {
        guard let space = line.firstIndex(of: " ") else { return (line, "") }
        return (String(line[..<space]), String(line[line.index(after: space)...]))
    }
}
