import DeskSessionProtocol
import Glibc
import Testing

/// The lines on the two pipes after the spec: replies from deskd-session, commands from deskd.
@Suite struct SessionReplyTests {
    @Test(arguments: [
        "ok", "server 812", "refused 13 Your account has expired; please contact your system administrator.",
        "failed could not start /usr/bin/Xtigervnc: No such file or directory.", "failed", "desktop 813",
        "exit desktop exited with status 0", "exit server killed by signal 11 (Segmentation fault)", "exit desktop could not be started",
    ])
    func aLineComesBackAsItWent(_ line: String) throws {
        let reply = try #require(SessionReply(line: line))
        #expect(reply.line == line)
        #expect(reply.encoded == Array((line + "\n").utf8))
    }

    @Test func eachLineSaysItsReply() {
        #expect(SessionReply(line: "ok") == .ok)
        #expect(SessionReply(line: "server 812") == .server(812))
        #expect(SessionReply(line: "refused 6 Not now.") == .refused(PAMRefusal(status: 6, sentence: "Not now.")))
        #expect(SessionReply(line: "refused Not now.") == nil, "a refusal without PAM's status")
        #expect(SessionReply(line: "desktop 813") == .desktop(813))
        #expect(SessionReply(line: "exit server exited with status 1") == .exit(.server, .exited(status: 1)))
        #expect(SessionReply(line: "exit desktop killed by signal 9 (Killed)") == .exit(.desktop, .killed(signal: 9, name: "Killed")))
    }

    /// A deskd-session started by a deskd from before the role was `server` said `xvnc`, and
    /// outlives an upgrade: its lines still read, and the server's are what it meant.
    @Test func theFormerWordForTheServerIsStillRead() {
        #expect(SessionReply(line: "xvnc 812") == .server(812))
        #expect(SessionReply(line: "exit xvnc killed by signal 15 (Terminated)") == .exit(.server, .killed(signal: 15, name: "Terminated")))
        #expect(SessionReply.server(812).line == "server 812")
        #expect(ProcessRole(word: "xvnc") == .server && ProcessRole(word: "server") == .server && ProcessRole(word: "desktop") == .desktop)
        #expect(ProcessRole(word: "Xvnc") == nil && ProcessRole.server.formerName == "xvnc" && ProcessRole.desktop.formerName == nil)
    }

    /// A sentence from PAM may hold newlines; each would end the line early.
    @Test func aNewlineInASentenceBecomesASpace() {
        #expect(SessionReply.failed("one\ntwo\n").line == "failed one two ")
        #expect(SessionReply.refused(PAMRefusal(status: 13, sentence: "a\nb")).encoded == Array("refused 13 a b\n".utf8))
    }

    @Test(arguments: ["", "hello", "ok then", "xvnc", "xvnc 0", "xvnc -5", "server x", "server", "desktop", "exit", "exit desktop",
                      "exit shell exited with status 0", "exit desktop ended", "Ok"])
    func aLineNoHelperWritesIsNone(_ line: String) {
        #expect(SessionReply(line: line) == nil)
    }

    @Test func commands() {
        #expect(SessionCommand.desktop.encoded == Array("desktop\n".utf8))
        #expect(SessionCommand.stop.encoded == Array("stop\n".utf8))
        for command in SessionCommand.allCases {
            #expect(SessionCommand(line: String(decoding: command.encoded.dropLast(), as: UTF8.self)) == command)
        }
        #expect(SessionCommand(line: "desktop ") == nil)
        #expect(SessionCommand(line: "") == nil)
    }
}
