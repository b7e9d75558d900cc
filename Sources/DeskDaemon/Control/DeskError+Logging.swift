import DeskCore
import Logging

extension DeskError {
    /// The fields a log line about a refusal carries: `error.code`, and `error.cause` when
    /// known (`mkdir /run/deskd/by-id/x: EACCES (Permission denied)`). The sentence is the
    /// caller's; the log keeps what an admin needs to find the fault.
    var logMetadata: Logger.Metadata {
        var metadata: Logger.Metadata = ["error.code": "\(code.rawValue)"]
        if let cause { metadata["error.cause"] = "\(cause)" }
        return metadata
    }
}
