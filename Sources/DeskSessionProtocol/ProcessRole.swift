/// Which of a session's two processes: the display server (Xvnc, or a compositor with wayvnc)
/// or the desktop. The name of its log (`server.log`), its exit record (`server.exit`) and the
/// word in an `exit` reply.
///
/// A deskd-session of a deskd from before the word was `server` said `xvnc`, on its stdout and
/// in its files; it outlives an upgrade of deskd (deskd.service's KillMode=process), so the
/// old word is still read (`init(word:)`, `formerName`).
public enum ProcessRole: String, Sendable, Equatable, CaseIterable {
    case server
    case desktop

    /// The role a word on the wire names, the former `xvnc` included.
    public init?(word: String) {
        if word == Self.server.formerName { self = .server } else { self.init(rawValue: word) }
    }

    /// What its log and exit record were named before, where that differs.
    public var formerName: String? { self == .server ? "xvnc" : nil }

    /// Its word on the wire and its files' name: the former one for a deskd that reads only
    /// that (`SessionSpec.speaksFormerWords`).
    public func word(former: Bool) -> String { former ? formerName ?? rawValue : rawValue }
}
