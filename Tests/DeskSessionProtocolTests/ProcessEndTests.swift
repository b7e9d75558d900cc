import DeskSessionProtocol
import Glibc
import Testing

/// How a process ended, in the words `history`, `deskctl logs` and deskd's errors show.
@Suite struct ProcessEndTests {
    @Test func theWaitStatusSaysHow() {
        #expect(ProcessEnd(waitStatus: 0) == .exited(status: 0))
        #expect(ProcessEnd(waitStatus: 127 << 8) == .exited(status: 127))
        #expect(ProcessEnd(waitStatus: SIGSEGV) == .killed(signal: 11, name: "Segmentation fault"))
        // The core-dump bit is not part of the signal.
        #expect(ProcessEnd(waitStatus: SIGTERM | 0x80) == .killed(signal: 15, name: "Terminated"))
    }

    @Test func theWordsAreAsEver() {
        #expect(ProcessEnd.exited(status: 0).description == "exited with status 0")
        #expect(ProcessEnd.killed(signal: 11, name: "Segmentation fault").description == "killed by signal 11 (Segmentation fault)")
        #expect(ProcessEnd.notStarted.description == "could not be started")
    }

    @Test(arguments: [
        ProcessEnd.exited(status: 0), .exited(status: 255), .killed(signal: 9, name: "Killed"), .killed(signal: 40, name: "Real-time signal 6"),
        .killed(signal: 99, name: "signal 99"), .killed(signal: 1, name: ""), .notStarted,
    ])
    func theWordsReadBack(_ end: ProcessEnd) {
        #expect(ProcessEnd(end.description) == end)
    }

    @Test(arguments: ["", "exited", "exited with status", "exited with status x", "killed by signal 11", "killed by signal 11 Segfault",
                      "killed by signal x (Hangup)", "killed by signal 11 (Segfault", "ended", "could not be started!"])
    func otherWordsAreNone(_ text: String) {
        #expect(ProcessEnd(text) == nil)
    }
}
