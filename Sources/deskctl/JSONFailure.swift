/// A `--json` failure: `{"error": {"code": …, "message": …}}` on stdout, so a script reads one
/// JSON document whatever happened. The code is deskd's (`no-such-session`) or, for what deskd
/// never saw, deskctl's own (`usage`, `unreachable`, `unresponsive`).
struct JSONFailure: Encodable {
    struct Body: Encodable {
        var code: String
        var message: String
    }

    var error: Body

    init(code: String, message: String) {
        error = Body(code: code, message: message)
    }

    func print() {
        // Two strings cannot fail to encode; should it ever, the exit status still tells the failure.
        try? printJSON(self)
    }
}
