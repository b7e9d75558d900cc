import Foundation
@testable import DeskCore
import Testing

@Suite struct InternetTimeTests {
    @Test func formatsAndParsesBackWholeSecondsInUTC() throws {
        let date = Date(timeIntervalSince1970: 1_795_309_262)
        #expect(InternetTime.format(date) == "2026-11-22T01:01:02Z")
        #expect(InternetTime.parse("2026-11-22T01:01:02Z") == date)
        #expect(InternetTime.parse("2026-11-22T02:01:02+01:00") == date)
        #expect(InternetTime.parse("yesterday") == nil)
        let session = try JSONDecoder.desk.decode([String: Date].self, from: Data(#"{"t":"1999-12-31T23:59:59Z"}"#.utf8))
        #expect(session["t"] == Date(timeIntervalSince1970: 946_684_799))
    }
}
