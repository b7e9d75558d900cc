import DeskCore
import DeskLinux
import DeskSessionProtocol

/// What a cluster desktop's job does next at each step of its bring-up, decided from what it saw.
/// Pure, so DeskJobTests try every branch without Slurm, root or a server: DesktopJob+BringUp
/// looks, these decide.
enum BringUpDecision {
    /// After the display server was started and its socket was waited on.
    enum AfterServer: Equatable {
        /// It answers RFB: the desktop comes next.
        case ready
        /// Another X server took its display between the look and its own lock: the next one.
        case tryNextDisplay
        /// The start fails, with the sentence the user reads.
        case fail(String)
    }

    /// `readiness` of `server` on `node`, which ended `end` (if it did), `recentLog` the last
    /// lines of its log and `lastLogLine` the last with something in it; `retriesLeft`: more
    /// displays may be tried.
    static func afterServer(_ readiness: RFBReadiness, server: any DisplayServer, node: String, end: ProcessEnd?,
                            recentLog: [String], lastLogLine: String?, retriesLeft: Bool, answerTime: Duration) -> AfterServer {
        switch readiness {
        case .answered:
            return .ready
        case .exited where retriesLeft && server.displayWasTaken(log: recentLog):
            return .tryNextDisplay
        case .exited:
            return .fail("\(server.name) \(end ?? .notStarted) on \(node) before it answered" + (lastLogLine.map { "; its log ends: \($0)" } ?? "") + ".")
        case .timedOut:
            return .fail("\(server.name) on \(node) did not answer on its socket within \(answerTime).")
        case .impostor(let what):
            return .fail("the job's socket on \(node) is not its \(type(of: server).viewerProgram)'s: \(what).")
        }
    }

    /// One look at whether the desktop has reached its display server: `clientEnds` are the
    /// client ends of the server's accepted connections (nil: the kernel's socket tables could
    /// not be read), `holds` whether one of the session's processes holds one of them.
    static func desktopReached(clientEnds: Set<UInt64>?, holds: (Set<UInt64>) -> Bool, sinceStart: Duration, settleTime: Duration) -> Bool {
        switch clientEnds {
        case let ends? where !ends.isEmpty: holds(ends)
        // Without the tables, alive a moment after its start is all that can be known.
        case nil: sinceStart >= settleTime
        default: false
        }
    }

    /// The start's end when the desktop did not reach its display in time: the server's end
    /// first (the desktop cannot go on without it), then the script's; nil when both still run,
    /// and the start stands (a login script may be waiting on the network).
    static func desktopNotReached(server: any DisplayServer, serverEnd: ProcessEnd?, desktopEnd: ProcessEnd?, desktopLastLine: String?, node: String) -> String? {
        if let serverEnd { return "\(server.name) \(serverEnd) on \(node) before the desktop reached its display." }
        if let desktopEnd {
            return "the desktop's startup script \(desktopEnd) before it reached its display" + (desktopLastLine.map { "; its output ends: \($0)" } ?? "") + "."
        }
        return nil
    }
}
