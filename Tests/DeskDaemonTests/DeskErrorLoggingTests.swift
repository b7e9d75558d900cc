@testable import DeskDaemon
import DeskCore
import Logging
import Testing

/// What a log line about a refused request carries: the code always, the cause when known.
@Suite struct DeskErrorLoggingTests {
    @Test func aRefusalLogsItsCodeAndItsCauseWhenKnown() {
        #expect(DeskError(.noSuchSession, "no session.").logMetadata == ["error.code": "no-such-session"])
        let cause = DeskError.Cause.system(operation: "mkdir", path: "/run/deskd/by-id/x", errno: 13, name: "EACCES", text: "Permission denied")
        #expect(DeskError(.internalError, "it failed.", cause: cause).logMetadata == [
            "error.code": "internal-error", "error.cause": "mkdir /run/deskd/by-id/x: EACCES (Permission denied)",
        ])
    }
}
