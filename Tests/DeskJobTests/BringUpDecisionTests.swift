import DeskCore
@testable import DeskJob
import DeskLinux
import DeskSessionProtocol
import Testing

/// A cluster desktop's bring-up, decided from what the job saw (BringUpDecision): the next
/// display only when an X server says it lost its own and tries are left, each failure in the
/// sentence the user reads, and the desktop ready only once one of its processes holds a
/// connection to its server (or, where the kernel's tables cannot be read, once it has lived a
/// moment).
@Suite struct BringUpDecisionTests {
    static let xvnc = Xvnc(executable: "/usr/bin/Xtigervnc")
    static let sway = WaylandVNC(compositor: .sway)
    static let taken = ["_XSERVTransSocketUNIXCreateListener: ...SocketCreateListener() failed", "(EE) Server is already active for display 7"]

    static func after(_ readiness: RFBReadiness, _ server: any DisplayServer = xvnc, log: [String] = [], retriesLeft: Bool = true,
                      end: ProcessEnd? = .exited(status: 1)) -> BringUpDecision.AfterServer {
        BringUpDecision.afterServer(readiness, server: server, node: "node3", end: end, recentLog: log, lastLogLine: log.last,
                                    retriesLeft: retriesLeft, answerTime: .seconds(20))
    }

    @Test func anAnsweringServerIsReady() {
        #expect(Self.after(.answered) == .ready)
        #expect(Self.after(.answered, Self.sway) == .ready)
    }

    @Test func anXServerThatLostItsDisplayTriesTheNextWhileTriesAreLeft() {
        #expect(Self.after(.exited, log: Self.taken) == .tryNextDisplay)
        #expect(Self.after(.exited, log: Self.taken, retriesLeft: false)
                == .fail("Xtigervnc exited with status 1 on node3 before it answered; its log ends: (EE) Server is already active for display 7."))
        // Another end is no lost display: its own words end the start.
        #expect(Self.after(.exited, log: ["(EE) Couldn't add screen"]) == .fail("Xtigervnc exited with status 1 on node3 before it answered; its log ends: (EE) Couldn't add screen."))
        #expect(Self.after(.exited, log: [], end: nil) == .fail("Xtigervnc could not be started on node3 before it answered."))
    }

    /// A compositor picks no display the job chose, so whatever its log says, it never retries.
    @Test func aCompositorNeverTriesAnotherDisplay() {
        #expect(Self.after(.exited, Self.sway, log: Self.taken)
                == .fail("sway with wayvnc exited with status 1 on node3 before it answered; its log ends: (EE) Server is already active for display 7."))
    }

    @Test func silenceAndAnImpostorEachSaySo() {
        #expect(Self.after(.timedOut) == .fail("Xtigervnc on node3 did not answer on its socket within 20.0 seconds."))
        #expect(Self.after(.impostor("served by pid 99 (uid 1002)"), Self.sway)
                == .fail("the job's socket on node3 is not its wayvnc's: served by pid 99 (uid 1002)."))
        #expect(Self.after(.impostor("served by pid 99 (uid 1002)")) == .fail("the job's socket on node3 is not its Xvnc's: served by pid 99 (uid 1002)."))
    }

    @Test func theDesktopHasReachedItsServerOnceItHoldsAConnection() {
        let ends: Set<UInt64> = [41, 42]
        var asked: Set<UInt64>?
        #expect(BringUpDecision.desktopReached(clientEnds: ends, holds: { asked = $0; return true }, sinceStart: .zero, settleTime: .milliseconds(100)))
        #expect(asked == ends)
        // Connections, but another's (wayvnc's, or a user's who is no process of this desktop).
        #expect(!BringUpDecision.desktopReached(clientEnds: ends, holds: { _ in false }, sinceStart: .seconds(5), settleTime: .milliseconds(100)))
        // No connection yet: the processes are not even looked at.
        #expect(!BringUpDecision.desktopReached(clientEnds: [], holds: { _ in Issue.record("looked at the processes"); return true },
                                                sinceStart: .seconds(5), settleTime: .milliseconds(100)))
        // The tables cannot be read: alive past the settle time is all that can be known.
        #expect(!BringUpDecision.desktopReached(clientEnds: nil, holds: { _ in true }, sinceStart: .milliseconds(50), settleTime: .milliseconds(100)))
        #expect(BringUpDecision.desktopReached(clientEnds: nil, holds: { _ in false }, sinceStart: .milliseconds(100), settleTime: .milliseconds(100)))
    }

    @Test func aDesktopThatDidNotGetThereSaysWhichEnded() {
        #expect(BringUpDecision.desktopNotReached(server: Self.sway, serverEnd: .killed(signal: 9, name: "Killed"), desktopEnd: .exited(status: 0),
                                                  desktopLastLine: "x", node: "node3")
                == "sway with wayvnc killed by signal 9 (Killed) on node3 before the desktop reached its display.")
        #expect(BringUpDecision.desktopNotReached(server: Self.xvnc, serverEnd: nil, desktopEnd: .exited(status: 127), desktopLastLine: "xterm: not found", node: "node3")
                == "the desktop's startup script exited with status 127 before it reached its display; its output ends: xterm: not found.")
        #expect(BringUpDecision.desktopNotReached(server: Self.xvnc, serverEnd: nil, desktopEnd: nil, desktopLastLine: nil, node: "node3") == nil)
    }
}
