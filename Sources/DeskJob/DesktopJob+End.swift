import DeskCore
import DeskLinux
import Glibc

extension DesktopJob {
    /// How long the end waits for the report line to deliver its last word: little, for an
    /// `ending` (the line is up and the reporter has been sending it while the processes
    /// ended); longer for a `failed`, which may come while the line is still being made.
    static let endingDelivery: Duration = .milliseconds(500)
    static let failureDelivery: Duration = .seconds(2)

    /// The end the job was asked for, or the one the desktop came to.
    func end(_ cause: EndCause) -> Int32 {
        reporter.send(JobReport(event: .ending, message: Self.reportable(cause.message)))
        tearDown()
        reporter.close(within: Self.endingDelivery)
        return cause.exitStatus
    }

    /// The desktop did not come up: the sentence to deskd and stderr, and nothing left behind.
    func fail(_ failure: JobFailure) -> Int32 {
        StandardError.say(failure.sentence)
        reporter.send(JobReport(event: .failed, message: Self.reportable(failure.sentence)))
        tearDown()
        reporter.close(within: Self.failureDelivery)
        return 1
    }

    /// Every process of the session ended and reaped, Xvnc's files in /tmp and the private
    /// directory removed. Within Slurm's KillWait: a few seconds at the very most.
    private func tearDown() {
        isEnding = true
        listener?.stop()
        let sweep = SessionSweep(sessionID: spec.session, uid: getuid(), me: getpid())
        let left = sweep.endAll { wait in pause(wait) }
        if !left.isEmpty {
            StandardError.say("processes \(left.map(String.init).joined(separator: ", ")) of the session did not end on SIGKILL (stuck in the kernel?).")
        }
        reapChildren()
        // Xvnc removes its lock and socket when SIGTERM ends it, not when SIGKILL does: then
        // the display stays taken until someone removes them, and only this user can.
        if let xvnc, let display { XLockFile.release(display, ownedBy: xvnc.pid) }
        // Xwayland's, likewise, when its compositor did not live to remove them: only a lock of
        // this user's naming a process that is gone.
        if let directory, let xwayland = recordedXDisplay(in: directory) { XLockFile.reclaim(xwayland, ownedBy: getuid()) }
        directory?.remove()
    }

    /// A report's message is at most 1024 bytes (JobReport.isWellFormed): a longer one is cut at
    /// a character's boundary and marked. (Cut at a byte, a character split in two decoded as
    /// U+FFFD, 3 bytes, and 1025 bytes made deskd drop the report, and the user lost the sentence.)
    static func reportable(_ sentence: String) -> String {
        guard sentence.utf8.count > 1024 else { return sentence }
        var end = sentence.utf8.index(sentence.utf8.startIndex, offsetBy: 1024 - "…".utf8.count)
        while end.samePosition(in: sentence.unicodeScalars) == nil { end = sentence.utf8.index(before: end) }
        return String(sentence[..<end]) + "…"
    }
}
