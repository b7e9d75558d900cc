import DeskCore

/// The shapes `--json` prints beyond deskd's own objects. docs/PROTOCOL.md describes them and
/// docs/schema holds their JSON Schemas, which the end-to-end tests check real output against.
enum JSONOutput {
    /// Whether the command line asks for JSON, for a failure that came before any command was
    /// parsed (after `--`, "--json" is an argument, not the flag).
    static func isRequested(by arguments: [String]) -> Bool {
        arguments.dropFirst().prefix { $0 != "--" }.contains("--json")
    }

    /// Foundation pretty-prints an empty array over three lines; "[]" is what scripts and people
    /// expect. Only a bracket pair with a newline between is collapsed: a newline never stands
    /// raw inside a JSON string, so no value is touched.
    static func collapsingEmptyArrays(_ json: String) -> String {
        let bytes = Array(json.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "[") {
                var end = index + 1
                var sawNewline = false
                while end < bytes.count, bytes[end] == UInt8(ascii: "\n") || bytes[end] == UInt8(ascii: " ") {
                    sawNewline = sawNewline || bytes[end] == UInt8(ascii: "\n")
                    end += 1
                }
                if sawNewline, end < bytes.count, bytes[end] == UInt8(ascii: "]") {
                    result += Array("[]".utf8)
                    index = end + 1
                    continue
                }
            }
            result.append(bytes[index])
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }
}

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

/// What `start`, `show` and `passwd --json` print: the session object, as `list` shows it, plus
/// `connect`, how to reach it from another machine. Flat, so scripts that read the session's
/// fields from `start --json` keep working.
struct ConnectableSession: Encodable {
    var session: Session
    var connect: ConnectHints?
    /// start --web: the one-time browser link.
    var link: BrowserLink? = nil

    private enum Key: String, CodingKey { case connect, link }

    func encode(to encoder: any Encoder) throws {
        try session.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(connect, forKey: .connect)
        try container.encodeIfPresent(link, forKey: .link)
    }
}
