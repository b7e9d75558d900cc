import Foundation
@testable import DeskCore
import Testing

@Suite struct IdleDurationTests {
    @Test(arguments: [("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86400), ("45", 45), ("2H", 7200)])
    func parses(text: String, seconds: Int) throws {
        #expect(try IdleDuration.seconds(parsing: text) == seconds)
    }

    @Test(arguments: ["", "h", "2w", "-5m", "0s", "1.5h", "2 h", "999999d", "٢h"])
    func refuses(text: String) {
        let error = #expect(throws: DeskError.self) { try IdleDuration.seconds(parsing: text) }
        #expect(error?.code == .invalidDuration)
    }

    @Test func passwordFilesDecodeBackToTheirPassword() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let password = SessionPassword.generate(using: &generator)
            #expect(VNCPasswordFile.decode(VNCPasswordFile.encode(password: password)) == password)
        }
        #expect(VNCPasswordFile.decode([1, 2, 3]) == nil)
    }
}

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
