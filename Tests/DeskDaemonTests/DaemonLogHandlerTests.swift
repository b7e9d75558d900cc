@testable import DeskDaemon
import Logging
import Synchronization
import Testing

@Suite("Log lines")
struct DaemonLogHandlerTests {
    static func line(toJournal: Bool, _ body: (Logger) -> Void) -> String {
        let captured = Mutex("")
        var logger = Logger(label: "deskd") { _ in DaemonLogHandler(toJournal: toJournal) { line in captured.withLock { $0 += line } } }
        logger.logLevel = .info
        body(logger)
        return captured.withLock { $0 }
    }

    @Test("under journald: a priority prefix and no timestamp of our own")
    func journal() {
        let text = Self.line(toJournal: true) { $0.warning("session did not end", metadata: ["session.display": ":3", "error": "no such file"]) }
        #expect(text == "<4>session did not end error=\"no such file\" session.display=:3\n")
    }

    @Test("on a terminal or in a file: an ISO 8601 time and the level")
    func plain() {
        let text = Self.line(toJournal: false) { $0.info("listening") }
        #expect(text.hasSuffix(" info listening\n") && text.hasPrefix("20") && text.contains("T"))
    }
}
