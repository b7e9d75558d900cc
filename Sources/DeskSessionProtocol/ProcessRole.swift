/// Which of a session's two processes: the name of its log (`xvnc.log`), its exit record
/// (`xvnc.exit`) and the word in an `exit` reply.
public enum ProcessRole: String, Sendable, Equatable, CaseIterable {
    case xvnc
    case desktop
}
