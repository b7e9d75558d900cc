// No imports: the TOML parser is pure Swift so that it can be fuzzed on its own (see TOML.swift).

/// A TOML table: its keys in the order the document defined them, their values, and the line
/// each key (or the [header] of a table) was defined on, so that a schema's error can name the
/// line without scanning the text again.
public struct TOMLTable: Equatable, Sendable, CustomStringConvertible, ExpressibleByDictionaryLiteral {
    /// In the order the document defined them.
    public private(set) var keys: [String] = []
    private var values: [TOMLKey: TOMLValue] = [:]
    private var lines: [TOMLKey: Int] = [:]

    public init() {}

    public init(dictionaryLiteral elements: (String, TOMLValue)...) {
        for (key, value) in elements { self[key] = value }
    }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }

    /// Setting a value keeps the key's place and line; setting nil removes the key.
    public subscript(key: String) -> TOMLValue? {
        get { values[TOMLKey(key)] }
        set {
            let name = TOMLKey(key)
            guard let newValue else {
                if values.removeValue(forKey: name) != nil {
                    keys.removeAll { TOMLKey($0) == name }
                    lines[name] = nil
                }
                return
            }
            if values.updateValue(newValue, forKey: name) == nil { keys.append(key) }
        }
    }

    /// The line `key` was defined on: its `key =` line, or for a table its [header] (or the
    /// first line that implied it). Nil for a key that is absent or was set by code.
    public func line(of key: String) -> Int? { lines[TOMLKey(key)] }

    /// Adds `key`, defined on `line`; the parser has already refused duplicates.
    mutating func define(_ key: String, _ value: TOMLValue, line: Int) {
        self[key] = value
        lines[TOMLKey(key)] = line
    }

    /// Equal when the keys and their values are; order and lines are how a document was
    /// written, not what it says.
    public static func == (a: TOMLTable, b: TOMLTable) -> Bool {
        a.values == b.values
    }

    /// As an inline table: { name = "x", port = 5 }.
    public var description: String {
        if keys.isEmpty { return "{}" }
        let pairs = keys.map { key in "\(TOMLTable.keyText(key)) = \(values[TOMLKey(key)]?.description ?? "")" }
        return "{ " + pairs.joined(separator: ", ") + " }"
    }

    /// A key bare when TOML allows it, else quoted.
    static func keyText(_ key: String) -> String {
        let bare = !key.isEmpty && key.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-"
        }
        return bare ? key : TOMLValue.quoted(key)
    }
}
