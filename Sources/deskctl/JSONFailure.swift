import DeskCore

/// A `--json` failure: `{"error": {"code": …, "message": …}}` on stdout, so a script reads one
/// JSON document whatever happened. The code is deskd's (`no-such-session`) or, for what deskd
/// never saw, deskctl's own (`usage`, `unreachable`, `unresponsive`); `cause` is deskd's, when
/// it gave one.
struct JSONFailure: Encodable {
    struct Body: Encodable {
        var code: String
        var message: String
        var cause: DeskError.Cause?
    }

    var error: Body

    init(code: String, message: String, cause: DeskError.Cause? = nil) {
        error = Body(code: code, message: message, cause: cause)
    }

    func print() {
        // Strings and numbers cannot fail to encode; should it ever, the exit status still tells the failure.
        try? printJSON(self)
    }
}
