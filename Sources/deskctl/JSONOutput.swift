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
