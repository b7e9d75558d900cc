// No imports: the TOML parser is pure Swift so that it can be fuzzed on its own (see TOML.swift).

/// One value of a TOML document. Dates and times keep their text as written: deskd reads none,
/// and a string loses nothing that a date type would have to decide (time zones, leap seconds).
public enum TOMLValue: Equatable, Sendable, CustomStringConvertible {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    /// An offset or local date-time, a local date or a local time, as written in the file.
    case datetime(String)
    case array([TOMLValue])
    case table(TOMLTable)

    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var int: Int? {
        if case .integer(let number) = self { return number }
        return nil
    }

    public var double: Double? {
        if case .float(let number) = self { return number }
        return nil
    }

    public var bool: Bool? {
        if case .boolean(let truth) = self { return truth }
        return nil
    }

    public var datetime: String? {
        if case .datetime(let text) = self { return text }
        return nil
    }

    public var array: [TOMLValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public var table: TOMLTable? {
        if case .table(let table) = self { return table }
        return nil
    }

    /// The value as TOML writes it, so that an error can quote what the file said:
    /// "must be a string in quotes, not 5".
    public var description: String {
        switch self {
        case .string(let text): TOMLValue.quoted(text)
        case .integer(let number): String(number)
        // Swift writes inf, -inf, nan, 1e+100 and 0.5, all of which are TOML floats.
        case .float(let number): number.description
        case .boolean(let truth): truth ? "true" : "false"
        case .datetime(let text): text
        case .array(let elements): "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .table(let table): table.description
        }
    }

    /// `text` as a TOML basic string: quotes, backslashes and control characters escaped.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\u{08}": result += "\\b"
            case "\t": result += "\\t"
            case "\n": result += "\\n"
            case "\u{0C}": result += "\\f"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
