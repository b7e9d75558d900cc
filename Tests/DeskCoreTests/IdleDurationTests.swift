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
}
