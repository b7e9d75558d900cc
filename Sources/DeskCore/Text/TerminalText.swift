/// Text from other people made safe for a terminal.
///
/// User names from NSS, desktop names, the audit trail's request fields and the tails of logs a
/// user writes can all hold escape sequences; printed raw on an admin's terminal they could
/// retitle it, rewrite what is on screen or, on some terminals, inject input. deskctl passes
/// every such string through `escape` before it prints it for a person, and JSON through `escapeJSON`.
public enum TerminalText {
    /// C0 controls (except tab), DEL, C1 controls and the bidirectional overrides become visible
    /// escapes (`\x1b`, `\u{202e}`); everything else, and a lone newline when `keepNewlines`, stays.
    public static func escape(_ text: String, keepNewlines: Bool = false) -> String {
        // Printable ASCII, nearly every cell of a table: a look at the bytes, not the scalars.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        guard text.unicodeScalars.contains(where: { needsEscape($0, keepNewlines: keepNewlines) }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if needsEscape(scalar, keepNewlines: keepNewlines) {
                result += scalar.value < 0x100 ? "\\x" + hex(scalar.value, width: 2) : "\\u{" + hex(scalar.value, width: 4) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// JSON text with DEL, C1 controls and the bidi overrides written as `\uXXXX` escapes:
    /// JSONEncoder escapes only C0, and `deskctl list --json` is read on terminals too. The
    /// result decodes to the same values (outside strings, JSON is plain ASCII).
    public static func escapeJSON(_ json: String) -> String {
        // Nothing from DEL up: the bytes say so faster than the scalars (a list of 200 is 100 KB).
        if !json.utf8.contains(where: { $0 >= 0x7F }) { return json }
        guard json.unicodeScalars.contains(where: { $0.value >= 0x7F && needsEscape($0, keepNewlines: true) }) else { return json }
        var result = ""
        result.reserveCapacity(json.utf8.count + 16)
        for scalar in json.unicodeScalars {
            if scalar.value >= 0x7F, needsEscape(scalar, keepNewlines: true) {
                result += "\\u" + hex(scalar.value, width: 4)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    static func needsEscape(_ scalar: Unicode.Scalar, keepNewlines: Bool) -> Bool {
        switch scalar.value {
        case 0x09: false
        case 0x0A: !keepNewlines
        case 0x00...0x1F, 0x7F...0x9F: true
        // Bidi embeddings, overrides and isolates reorder what an admin reads.
        case 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
