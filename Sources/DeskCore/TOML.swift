// No imports, not even FoundationEssentials: what this parser reads sets deskd's limits, so it is
// kept small enough to read whole and to fuzz on its own (this file with TOMLValue.swift,
// TOMLTable.swift and TOMLError.swift, which import nothing either).

/// TOML 1.0.0 (https://toml.io/en/v1.0.0). Tested against toml-test's 1.0 cases
/// (Tests/DeskCoreTests/TOMLCorpus).
///
/// One pass over the UTF-8 bytes, linear in their number. Recursion is only into arrays and
/// inline tables, and nesting of every kind (tables, arrays, inline tables, dotted keys) stops at
/// `maximumDepth`, so hostile input cannot exhaust the stack.
public enum TOML {
    /// Levels of nesting a document may have: `a.b.c = 1` is three, `x = [[1]]` is three.
    public static let maximumDepth = 128

    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        var parser = TOMLParser(bytes: Array(text.utf8))
        return try parser.document()
    }

    /// Bytes that are meant to be UTF-8; anything else is refused with the line it is on.
    public static func parse(utf8 bytes: [UInt8]) throws(TOMLError) -> TOMLTable {
        var parser = TOMLParser(bytes: bytes)
        if let bad = TOMLParser.firstInvalidUTF8(bytes) {
            throw parser.error("the file is not valid UTF-8 here", at: bad)
        }
        return try parser.document()
    }
}

/// A table while the document is read: besides its entries, how it came to be, which decides
/// whether a later [header] or dotted key may add to it. A class, so that a header can hold on to
/// the table its keys go into without copying the tree.
private final class TableBuilder {
    enum Origin: Equatable {
        /// Named on the way to another table ([a.b] implies a): a later [a] may still define it.
        case implied
        /// Defined by a [header] or a [[header]], or as an inline table.
        case header
        /// Defined by dotted keys (a.b = 1 defines a) in one header's block: more dotted keys in
        /// that block may add to it, nothing else may.
        case dotted(block: Int)
    }

    enum Entry {
        case value(TOMLValue)
        case table(TableBuilder)
        case arrayOfTables(ArrayOfTables)
    }

    /// A class too, so that each [[header]] appends in place rather than copying the array.
    final class ArrayOfTables {
        var tables: [TableBuilder]
        init(_ first: TableBuilder) { tables = [first] }
    }

    var origin: Origin
    /// Levels of nesting down to this table, which the parser keeps within TOML.maximumDepth.
    let depth: Int
    private var keys: [String] = []
    private var entries: [TOMLKey: (entry: Entry, line: Int)] = [:]

    init(origin: Origin, depth: Int) {
        (self.origin, self.depth) = (origin, depth)
    }

    subscript(key: String) -> Entry? { entries[TOMLKey(key)]?.entry }

    func define(_ key: String, _ entry: Entry, line: Int) {
        if entries.updateValue((entry, line), forKey: TOMLKey(key)) == nil { keys.append(key) }
    }

    /// A table that was implied takes the line of the header that defines it.
    func moveLine(of key: String, to line: Int) {
        entries[TOMLKey(key)]?.line = line
    }

    /// The finished table. Recursion is as deep as the tables, which the parser bounds.
    func build() -> TOMLTable {
        var table = TOMLTable()
        for key in keys {
            guard let slot = entries[TOMLKey(key)] else { continue }
            switch slot.entry {
            case .value(let value): table.define(key, value, line: slot.line)
            case .table(let builder): table.define(key, .table(builder.build()), line: slot.line)
            case .arrayOfTables(let array): table.define(key, .array(array.tables.map { .table($0.build()) }), line: slot.line)
            }
        }
        return table
    }
}

private struct TOMLParser {
    private let bytes: [UInt8]
    private var position = 0
    /// The line of `linePosition`, so that finding the line of each key is linear in all: keys
    /// come in the order of the text, and each count starts where the last one stopped.
    private var linePosition = 0
    private var lineAtPosition = 1
    /// Numbers each [header]'s block of keys, and each inline table, for TableBuilder.Origin.
    private var block = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    // MARK: The document

    mutating func document() throws(TOMLError) -> TOMLTable {
        let root = TableBuilder(origin: .header, depth: 0)
        var current = root
        // A byte order mark may start the file; nowhere else is it allowed.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        while true {
            skipWhitespace()
            guard let byte = peek() else { break }
            switch byte {
            case ascii("#"), ascii("\n"), ascii("\r"):
                try endOfLine(after: "a blank")
            case ascii("["):
                current = try header(root: root)
                try endOfLine(after: "the table header")
            default:
                try keyValue(into: current, block: block)
                try endOfLine(after: "the value")
            }
        }
        return root.build()
    }

    /// Spaces and tabs, an optional comment and a newline (or the end of the file).
    private mutating func endOfLine(after what: String) throws(TOMLError) {
        skipWhitespace()
        if peek() == ascii("#") { try comment() }
        guard let byte = peek() else { return }
        if try newline() { return }
        throw error("expected the end of the line after \(what), found \(describe(byte))", at: position)
    }

    /// Consumes LF or CRLF if one is next; a CR without an LF is an error.
    private mutating func newline() throws(TOMLError) -> Bool {
        switch peek() {
        case ascii("\n"):
            position += 1
            return true
        case ascii("\r"):
            guard peek(1) == ascii("\n") else {
                throw error("a carriage return must be followed by a line feed", at: position)
            }
            position += 2
            return true
        default:
            return false
        }
    }

    /// From # to the end of the line, which is left for the caller.
    private mutating func comment() throws(TOMLError) {
        position += 1
        while let byte = peek(), byte != ascii("\n") {
            if byte == ascii("\r") {
                guard peek(1) == ascii("\n") else {
                    throw error("a carriage return must be followed by a line feed", at: position)
                }
                return
            }
            if Self.isControl(byte) {
                throw error("control character \(describe(byte)) is not allowed in a comment", at: position)
            }
            position += 1
        }
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == ascii(" ") || byte == ascii("\t") { position += 1 }
    }

    /// Between the elements of an array: whitespace, comments and newlines alike.
    private mutating func skipWhitespaceCommentsAndNewlines() throws(TOMLError) {
        while true {
            skipWhitespace()
            if peek() == ascii("#") { try comment() }
            guard try newline() else { return }
        }
    }

    // MARK: Tables

    /// [a.b] or [[a.b]]: defines the table (or the next table of the array) and returns it, for the
    /// keys that follow.
    private mutating func header(root: TableBuilder) throws(TOMLError) -> TableBuilder {
        let start = position
        let line = lineOf(start)
        position += 1
        let isArray = peek() == ascii("[")
        if isArray { position += 1 }
        skipWhitespace()
        let path = try key()
        guard peek() == ascii("]") else {
            throw error("expected '\(isArray ? "]]" : "]")' to close the header, found \(describe(peek()))", at: position)
        }
        position += 1
        if isArray {
            guard peek() == ascii("]") else {
                throw error("expected ']]' to close the header of an array of tables, found \(describe(peek()))", at: position)
            }
            position += 1
        }
        block += 1
        let name = Self.dotted(path.map(\.name))

        var table = root
        for (index, part) in path.dropLast().enumerated() {
            switch table[part.name] {
            case nil:
                let implied = try child(of: table, origin: .implied, at: part.position)
                table.define(part.name, .table(implied), line: line)
                table = implied
            case .table(let existing):
                table = existing
            case .arrayOfTables(let array):
                // [a.b] after [[a]] names b in the last table of a.
                table = array.tables.last ?? table
            case .value(let value):
                let sofar = Self.dotted(path[...index].map(\.name))
                throw error("\(sofar) is already \(Self.kind(of: value)), so \(isArray ? "[[\(name)]]" : "[\(name)]") cannot be under it", at: part.position)
            }
        }

        guard let last = path.last else { return table }
        switch (table[last.name], isArray) {
        case (nil, false):
            let defined = try child(of: table, origin: .header, at: last.position)
            table.define(last.name, .table(defined), line: line)
            return defined
        case (nil, true):
            let first = try child(of: table, origin: .header, at: last.position, depth: 2)
            table.define(last.name, .arrayOfTables(.init(first)), line: line)
            return first
        case (.table(let existing), false):
            switch existing.origin {
            case .implied:
                existing.origin = .header
                table.moveLine(of: last.name, to: line)
                return existing
            case .header:
                throw error("table [\(name)] is defined twice", at: start)
            case .dotted:
                throw error("table [\(name)] is already defined by dotted keys", at: start)
            }
        case (.table, true):
            throw error("[[\(name)]] names a table that is already defined, not an array of tables", at: start)
        case (.arrayOfTables, false):
            throw error("[\(name)] is already an array of tables; add to it with [[\(name)]]", at: start)
        case (.arrayOfTables(let array), true):
            let next = try child(of: table, origin: .header, at: last.position, depth: 2)
            array.tables.append(next)
            return next
        case (.value(let value), _):
            throw error("\(name) is already \(Self.kind(of: value)), so \(isArray ? "[[\(name)]]" : "[\(name)]") cannot define it", at: start)
        }
    }

    /// A new table under `parent`, `depth` levels down (2 for a table in an array of tables).
    private func child(of parent: TableBuilder, origin: TableBuilder.Origin, at position: Int, depth: Int = 1) throws(TOMLError) -> TableBuilder {
        let depth = parent.depth + depth
        guard depth <= TOML.maximumDepth else { throw tooDeep(at: position) }
        return TableBuilder(origin: origin, depth: depth)
    }

    /// key = value, into `table`; dotted keys make or extend tables of `block`.
    private mutating func keyValue(into table: TableBuilder, block: Int) throws(TOMLError) {
        let start = position
        let line = lineOf(start)
        let path = try key()
        guard peek() == ascii("=") else {
            throw error("expected '=' after the key, found \(describe(peek()))", at: position)
        }
        position += 1
        skipWhitespace()

        var target = table
        for (index, part) in path.dropLast().enumerated() {
            // Named only in an error, so that long dotted keys cost no more than their length.
            var sofar: String { Self.dotted(path[...index].map(\.name)) }
            switch target[part.name] {
            case nil:
                let defined = try child(of: target, origin: .dotted(block: block), at: part.position)
                target.define(part.name, .table(defined), line: line)
                target = defined
            case .table(let existing):
                switch existing.origin {
                case .dotted(let other) where other == block:
                    break
                case .implied:
                    existing.origin = .dotted(block: block)
                case .header:
                    throw error("table \(sofar) is defined by its own [header]; dotted keys cannot add to it", at: part.position)
                case .dotted:
                    throw error("table \(sofar) was defined by dotted keys under another header; dotted keys here cannot add to it", at: part.position)
                }
                target = existing
            case .arrayOfTables:
                throw error("\(sofar) is an array of tables; dotted keys cannot add to it", at: part.position)
            case .value(let value):
                throw error("key \(Self.quotedKey(sofar)) is already \(Self.kind(of: value)), not a table of keys", at: part.position)
            }
        }

        guard let last = path.last else { return }
        if target[last.name] != nil {
            throw error("key \(Self.quotedKey(Self.dotted(path.map(\.name)))) is defined twice", at: start)
        }
        let value = try value(depth: target.depth + 1)
        target.define(last.name, .value(value), line: line)
    }

    // MARK: Keys

    /// A dotted key, each part with where it starts. Leaves the position after trailing spaces.
    private mutating func key() throws(TOMLError) -> [(name: String, position: Int)] {
        var parts: [(name: String, position: Int)] = []
        while true {
            let start = position
            parts.append((try simpleKey(), start))
            skipWhitespace()
            guard peek() == ascii(".") else { return parts }
            position += 1
            skipWhitespace()
        }
    }

    private mutating func simpleKey() throws(TOMLError) -> String {
        let start = position
        switch peek() {
        case ascii("\""):
            if peek(1) == ascii("\""), peek(2) == ascii("\"") {
                throw error("a multi-line string cannot be a key", at: start)
            }
            return try basicString()
        case ascii("'"):
            if peek(1) == ascii("'"), peek(2) == ascii("'") {
                throw error("a multi-line string cannot be a key", at: start)
            }
            return try literalString()
        default:
            while let byte = peek(), Self.isBareKey(byte) { position += 1 }
            guard position > start else {
                throw error("expected a key, found \(describe(peek())); a key is letters, digits, '_' and '-', or a quoted string", at: start)
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }
    }

    // MARK: Values

    private mutating func value(depth: Int) throws(TOMLError) -> TOMLValue {
        let start = position
        guard depth <= TOML.maximumDepth else { throw tooDeep(at: start) }
        guard let byte = peek() else { throw error("expected a value, found the end of the file", at: start) }
        switch byte {
        case ascii("\""):
            if peek(1) == ascii("\""), peek(2) == ascii("\"") { return .string(try multilineBasicString()) }
            return .string(try basicString())
        case ascii("'"):
            if peek(1) == ascii("'"), peek(2) == ascii("'") { return .string(try multilineLiteralString()) }
            return .string(try literalString())
        case ascii("t"), ascii("f"):
            for word in ["true", "false"] where bytes[position...].starts(with: word.utf8) {
                position += word.utf8.count
                return .boolean(word == "true")
            }
        case ascii("["):
            return try array(depth: depth)
        case ascii("{"):
            return try inlineTable(depth: depth)
        case ascii("+"), ascii("-"), ascii("0")...ascii("9"), ascii("i"), ascii("n"):
            return try numberOrDate()
        default:
            break
        }
        throw error("expected a value (a string in quotes, a number, true, false, a date, [ or {), found \(describe(byte))", at: start)
    }

    private mutating func array(depth: Int) throws(TOMLError) -> TOMLValue {
        let start = position
        position += 1
        var elements: [TOMLValue] = []
        while true {
            try skipWhitespaceCommentsAndNewlines()
            switch peek() {
            case nil:
                throw error("an array is not closed with ']'", at: start)
            case ascii("]"):
                position += 1
                return .array(elements)
            default:
                elements.append(try value(depth: depth + 1))
            }
            try skipWhitespaceCommentsAndNewlines()
            switch peek() {
            case ascii(","):
                position += 1
            case ascii("]"):
                position += 1
                return .array(elements)
            case nil:
                throw error("an array is not closed with ']'", at: start)
            case let byte?:
                throw error("expected ',' or ']' after an element of the array, found \(describe(byte))", at: position)
            }
        }
    }

    /// { a = 1, b.c = 2 }: on one line, no trailing comma, and closed to later additions, since
    /// it becomes a value.
    private mutating func inlineTable(depth: Int) throws(TOMLError) -> TOMLValue {
        let start = position
        position += 1
        let table = TableBuilder(origin: .header, depth: depth)
        let saved = block
        defer { block = saved }
        // Dotted keys within the braces may extend each other, and nothing outside them.
        block += 1
        let inner = block
        skipWhitespace()
        if peek() == ascii("}") {
            position += 1
            return .table(table.build())
        }
        while true {
            try inlineTableCheck(start: start)
            try keyValue(into: table, block: inner)
            skipWhitespace()
            switch peek() {
            case ascii(","):
                position += 1
                skipWhitespace()
                if peek() == ascii("}") {
                    throw error("an inline table may not end with a comma", at: position)
                }
            case ascii("}"):
                position += 1
                return .table(table.build())
            default:
                try inlineTableCheck(start: start)
                throw error("expected ',' or '}' after a value in the inline table, found \(describe(peek()))", at: position)
            }
        }
    }

    /// The errors an inline table runs into at a newline, a comment or the end of the file.
    private func inlineTableCheck(start: Int) throws(TOMLError) {
        switch peek() {
        case nil:
            throw error("an inline table is not closed with '}'", at: start)
        case ascii("\n"), ascii("\r"), ascii("#"):
            throw error("an inline table must be on one line, without comments; use a [table] for more", at: position)
        default:
            return
        }
    }

    // MARK: Strings

    /// "…" on one line, with escapes.
    private mutating func basicString() throws(TOMLError) -> String {
        let start = position
        position += 1
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else { throw error("a string is not closed", at: start) }
            switch byte {
            case ascii("\""):
                position += 1
                return String(decoding: text, as: UTF8.self)
            case ascii("\\"):
                try escape(into: &text, multiline: false)
            case ascii("\n"), ascii("\r"):
                throw error("a string is not closed before the end of the line; a string on more lines needs \"\"\"", at: start)
            default:
                try stringByte(byte, into: &text)
            }
        }
    }

    /// """…""" over lines, with escapes; a newline just after the opening quotes is not part of it.
    private mutating func multilineBasicString() throws(TOMLError) -> String {
        let start = position
        position += 3
        _ = try newline()
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else { throw error("a multi-line string is not closed with \"\"\"", at: start) }
            switch byte {
            case ascii("\""):
                if try closingQuotes(ascii("\""), into: &text) { return String(decoding: text, as: UTF8.self) }
            case ascii("\\"):
                try escape(into: &text, multiline: true)
            case ascii("\n"), ascii("\r"):
                _ = try newline()
                text.append(ascii("\n"))
            default:
                try stringByte(byte, into: &text)
            }
        }
    }

    /// '…' on one line, as written.
    private mutating func literalString() throws(TOMLError) -> String {
        let start = position
        position += 1
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else { throw error("a string is not closed", at: start) }
            switch byte {
            case ascii("'"):
                position += 1
                return String(decoding: text, as: UTF8.self)
            case ascii("\n"), ascii("\r"):
                throw error("a string is not closed before the end of the line; a string on more lines needs '''", at: start)
            default:
                try stringByte(byte, into: &text)
            }
        }
    }

    /// '''…''' over lines, as written; a newline just after the opening quotes is not part of it.
    private mutating func multilineLiteralString() throws(TOMLError) -> String {
        let start = position
        position += 3
        _ = try newline()
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else { throw error("a multi-line string is not closed with '''", at: start) }
            switch byte {
            case ascii("'"):
                if try closingQuotes(ascii("'"), into: &text) { return String(decoding: text, as: UTF8.self) }
            case ascii("\n"), ascii("\r"):
                _ = try newline()
                text.append(ascii("\n"))
            default:
                try stringByte(byte, into: &text)
            }
        }
    }

    /// At a run of quotes in a multi-line string: three end it, and up to two more just before
    /// them belong to the text ("""a"""" is `a"`). True when the string has ended.
    private mutating func closingQuotes(_ quote: UInt8, into text: inout [UInt8]) throws(TOMLError) -> Bool {
        var run = 0
        while peek(run) == quote { run += 1 }
        if run < 3 {
            text.append(contentsOf: repeatElement(quote, count: run))
            position += run
            return false
        }
        guard run <= 5 else {
            throw error("too many quotes at the end of a multi-line string; escape the ones that belong to the text", at: position + 5)
        }
        text.append(contentsOf: repeatElement(quote, count: run - 3))
        position += run
        return true
    }

    /// A byte of a string as written: anything but control characters other than tab.
    private mutating func stringByte(_ byte: UInt8, into text: inout [UInt8]) throws(TOMLError) {
        if Self.isControl(byte) {
            throw error("control character \(describe(byte)) is not allowed in a string; write it as an escape such as \\u\(Self.hex4(byte))", at: position)
        }
        text.append(byte)
        position += 1
    }

    private mutating func escape(into text: inout [UInt8], multiline: Bool) throws(TOMLError) {
        let start = position
        position += 1
        guard let byte = peek() else { throw error("a string is not closed", at: start) }
        position += 1
        switch byte {
        case ascii("b"): text.append(0x08)
        case ascii("t"): text.append(0x09)
        case ascii("n"): text.append(0x0A)
        case ascii("f"): text.append(0x0C)
        case ascii("r"): text.append(0x0D)
        case ascii("\""): text.append(ascii("\""))
        case ascii("\\"): text.append(ascii("\\"))
        case ascii("u"), ascii("U"):
            let digits = byte == ascii("u") ? 4 : 8
            var code: UInt32 = 0
            for _ in 0..<digits {
                guard let digit = peek().flatMap(Self.hexValue) else {
                    throw error("\\\(byte == ascii("u") ? "u" : "U") takes exactly \(digits) hexadecimal digits", at: start)
                }
                code = code << 4 | UInt32(digit)
                position += 1
            }
            guard let scalar = Unicode.Scalar(code) else {
                throw error("\(String(decoding: bytes[start..<position], as: UTF8.self)) is not a Unicode scalar value (surrogates and values past 10FFFF are not)", at: start)
            }
            UTF8.encode(scalar) { text.append($0) }
        case ascii("\n") where !multiline, ascii("\r") where !multiline:
            throw error("a string is not closed before the end of the line; a string on more lines needs \"\"\"", at: start)
        case ascii(" "), ascii("\t"), ascii("\n"), ascii("\r"):
            // A backslash at the end of a line joins the next non-blank text to this line.
            guard multiline else {
                throw error("a backslash followed by \(byte == ascii(" ") ? "a space" : "a tab") is not an escape; a backslash ends a line only in a multi-line string", at: start)
            }
            position -= 1
            skipWhitespace()
            guard try newline() else {
                throw error("only a line break may follow a backslash and spaces; write \\\\ for a backslash", at: start)
            }
            while true {
                skipWhitespace()
                guard try newline() else { break }
            }
        default:
            throw error("\\\(describeEscaped(byte)) is not an escape TOML knows; it knows \\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX and \\UXXXXXXXX", at: start)
        }
    }

    // MARK: Numbers, dates and times

    /// Everything that starts with a digit, a sign, inf or nan: read as one word first (a date
    /// may hold a space), then sorted out.
    private mutating func numberOrDate() throws(TOMLError) -> TOMLValue {
        let start = position
        scanWord()
        // 1979-05-27 07:32:00: a date, a space and a time are one value.
        if position - start == 10, Self.isDate(bytes[start..<position]), peek() == ascii(" "),
           let h1 = peek(1), let h2 = peek(2), Self.isDigit(h1), Self.isDigit(h2), peek(3) == ascii(":") {
            position += 1
            scanWord()
        }
        let word = bytes[start..<position]
        let text = String(decoding: word, as: UTF8.self)
        if word.contains(ascii(":")) || (word.count >= 5 && word.prefix(4).allSatisfy(Self.isDigit) && word[start + 4] == ascii("-")) {
            if let problem = DateTimeShape.problem(word) {
                throw error("\(text) is not a date or time: \(problem)", at: start)
            }
            return .datetime(text)
        }
        return try number(word, text: text, at: start)
    }

    private mutating func scanWord() {
        while let byte = peek(), Self.isBareKey(byte) || byte == ascii("+") || byte == ascii(".") || byte == ascii(":") {
            position += 1
        }
    }

    private func number(_ word: ArraySlice<UInt8>, text: String, at start: Int) throws(TOMLError) -> TOMLValue {
        var digits = word
        var negative = false
        if let sign = digits.first, sign == ascii("+") || sign == ascii("-") {
            negative = sign == ascii("-")
            digits = digits.dropFirst()
        }
        if digits.elementsEqual("inf".utf8) { return .float(negative ? -.infinity : .infinity) }
        if digits.elementsEqual("nan".utf8) { return .float(.nan) }

        if digits.count >= 2, digits.first == ascii("0"), let radixLetter = digits.dropFirst().first,
           let radix = [ascii("x"): 16, ascii("o"): 8, ascii("b"): 2][radixLetter] {
            guard word.count == digits.count else {
                throw error("\(text): a sign is allowed only on decimal numbers", at: start)
            }
            return .integer(try integer(digits.dropFirst(2), radix: radix, negative: false, text: text, at: start))
        }

        guard let first = digits.first, Self.isDigit(first) else {
            throw error("\(text) is not a number, a date or a time", at: start)
        }
        // The integer part: no leading zeros (0.5 and 0e3 are fine, 01 and 00.5 are not).
        let integerPart = digits.prefix { Self.isDigit($0) || $0 == ascii("_") }
        if integerPart.count > 1, first == ascii("0") {
            throw error("\(text): leading zeros are not allowed", at: start)
        }
        if integerPart.count == digits.count {
            return .integer(try integer(digits, radix: 10, negative: negative, text: text, at: start))
        }
        guard let next = digits[integerPart.endIndex...].first, [ascii("."), ascii("e"), ascii("E")].contains(next) else {
            throw error("\(text) is not a number, a date or a time", at: start)
        }
        return .float(try float(digits, integerPart: integerPart, negative: negative, text: text, at: start))
    }

    /// Digits of `radix` with single underscores between them, within Int64.
    private func integer(_ digits: ArraySlice<UInt8>, radix: Int, negative: Bool, text: String, at start: Int) throws(TOMLError) -> Int {
        guard Self.underscoresBetweenDigits(digits, { Self.hexValue($0).map { Int($0) < radix } ?? false }) else {
            throw error(digits.contains(ascii("_"))
                ? "\(text): '_' may only stand between two digits"
                : "\(text) is not a number", at: start)
        }
        var value = 0
        for byte in digits where byte != ascii("_") {
            // Accumulated negative for a negative number, so that Int64.min fits.
            let digit = Int(Self.hexValue(byte) ?? 0)
            let (shifted, overflowOnMultiply) = value.multipliedReportingOverflow(by: radix)
            let (next, overflowOnAdd) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflowOnMultiply, !overflowOnAdd else {
                throw error("\(text) does not fit in a 64-bit integer", at: start)
            }
            value = next
        }
        return value
    }

    /// 1.5, 1e6, 6.02_2e+23: an integer part, then a fraction, an exponent or both.
    private func float(_ digits: ArraySlice<UInt8>, integerPart: ArraySlice<UInt8>, negative: Bool, text: String, at start: Int) throws(TOMLError) -> Double {
        // Made only when thrown: finding an error's line reads the text up to it.
        var problem: TOMLError {
            error("\(text) is not a number: a float is digits, then '.' and digits, 'e' and digits, or both, with '_' only between digits", at: start)
        }
        var rest = digits[integerPart.endIndex...]
        var fraction: ArraySlice<UInt8> = []
        var exponent: ArraySlice<UInt8> = []
        if rest.first == ascii(".") {
            rest = rest.dropFirst()
            fraction = rest.prefix { Self.isDigit($0) || $0 == ascii("_") }
            guard !fraction.isEmpty else { throw problem }
            rest = rest[fraction.endIndex...]
        }
        if let e = rest.first, e == ascii("e") || e == ascii("E") {
            rest = rest.dropFirst()
            if let sign = rest.first, sign == ascii("+") || sign == ascii("-") { rest = rest.dropFirst() }
            exponent = rest
            guard !exponent.isEmpty else { throw problem }
            rest = []
        }
        guard rest.isEmpty,
              Self.underscoresBetweenDigits(integerPart, Self.isDigit),
              fraction.isEmpty || Self.underscoresBetweenDigits(fraction, Self.isDigit),
              exponent.isEmpty || Self.underscoresBetweenDigits(exponent, Self.isDigit)
        else { throw problem }
        // Swift's own reading of the digits, which rounds correctly; past Double's range it
        // gives ±inf, which TOML leaves to the parser.
        let plain = String(decoding: digits.filter { $0 != ascii("_") }, as: UTF8.self)
        guard let value = Double(plain) else { throw problem }
        return negative ? -value : value
    }

    // MARK: Positions and errors

    private func peek(_ offset: Int = 0) -> UInt8? {
        let index = position + offset
        return index < bytes.count ? bytes[index] : nil
    }

    /// The line of `target`, counting on from the last line asked for.
    private mutating func lineOf(_ target: Int) -> Int {
        if target < linePosition { (linePosition, lineAtPosition) = (0, 1) }
        let end = min(target, bytes.count)
        while linePosition < end {
            if bytes[linePosition] == ascii("\n") { lineAtPosition += 1 }
            linePosition += 1
        }
        return lineAtPosition
    }

    func error(_ message: String, at target: Int) -> TOMLError {
        let end = min(max(target, 0), bytes.count)
        var line = 1
        var lineStart = 0
        for index in 0..<end where bytes[index] == ascii("\n") {
            line += 1
            lineStart = index + 1
        }
        // Columns count scalars: skip UTF-8's continuation bytes.
        let column = bytes[lineStart..<end].reduce(1) { $1 & 0xC0 == 0x80 ? $0 : $0 + 1 }
        return TOMLError(line: line, column: column, message: message)
    }

    private func tooDeep(at position: Int) -> TOMLError {
        error("nested more than \(TOML.maximumDepth) levels deep", at: position)
    }

    /// The character at `position` for a message: 'x', a name, or U+XXXX.
    private func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "the end of the file" }
        switch byte {
        case ascii("\n"), ascii("\r"): return "the end of the line"
        case 0x20: return "a space"
        case 0x21...0x7E: return "'\(Character(Unicode.Scalar(byte)))'"
        case 0x00...0x1F, 0x7F: return "U+\(Self.hex4(byte))"
        default:
            // The whole character: the lead byte and its continuation bytes.
            var end = position + 1
            while end < bytes.count, end - position < 4, bytes[end] & 0xC0 == 0x80 { end += 1 }
            guard position < bytes.count, bytes[position] == byte else { return "a non-ASCII character" }
            let character = String(decoding: bytes[position..<end], as: UTF8.self)
            let scalar = character.unicodeScalars.first.map { String($0.value, radix: 16, uppercase: true) } ?? ""
            return "'\(character)' (U+\(String(repeating: "0", count: max(0, 4 - scalar.count)) + scalar))"
        }
    }

    private func describeEscaped(_ byte: UInt8) -> String {
        byte > 0x20 && byte < 0x7F ? String(Character(Unicode.Scalar(byte))) : "U+\(Self.hex4(byte))"
    }

    // MARK: Characters

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= ascii("0") && byte <= ascii("9") }

    private static func isBareKey(_ byte: UInt8) -> Bool {
        switch byte {
        case ascii("A")...ascii("Z"), ascii("a")...ascii("z"), ascii("0")...ascii("9"), ascii("_"), ascii("-"): true
        default: false
        }
    }

    /// What TOML keeps out of strings and comments: C0 controls but tab, and DEL.
    private static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != ascii("\t")) || byte == 0x7F
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case ascii("0")...ascii("9"): byte - ascii("0")
        case ascii("a")...ascii("f"): byte - ascii("a") + 10
        case ascii("A")...ascii("F"): byte - ascii("A") + 10
        default: nil
        }
    }

    private static func hex4(_ byte: UInt8) -> String {
        let hex = String(byte, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - hex.count) + hex
    }

    /// One or more digits, with each '_' between two of them.
    private static func underscoresBetweenDigits(_ text: ArraySlice<UInt8>, _ isDigit: (UInt8) -> Bool) -> Bool {
        guard let first = text.first, let last = text.last, isDigit(first), isDigit(last) else { return false }
        var previousWasDigit = false
        for byte in text {
            if byte == ascii("_") {
                guard previousWasDigit else { return false }
                previousWasDigit = false
            } else {
                guard isDigit(byte) else { return false }
                previousWasDigit = true
            }
        }
        return true
    }

    /// YYYY-MM-DD
    private static func isDate(_ text: ArraySlice<UInt8>) -> Bool {
        text.count == 10 && text.enumerated().allSatisfy { index, byte in
            index == 4 || index == 7 ? byte == ascii("-") : isDigit(byte)
        }
    }

    private static func dotted(_ names: [String]) -> String {
        names.map(TOMLTable.keyText).joined(separator: ".")
    }

    /// A dotted key for a message: in quotes, unless a part of it already is.
    private static func quotedKey(_ dotted: String) -> String {
        dotted.contains("\"") ? dotted : "\"\(dotted)\""
    }

    private static func kind(of value: TOMLValue) -> String {
        switch value {
        case .table: "an inline table, which cannot be extended"
        case .array: "an array, which cannot be extended"
        default: "a value"
        }
    }

    /// The offset of the first byte that is not well-formed UTF-8 (RFC 3629: no overlong forms,
    /// no surrogates, nothing past U+10FFFF), or nil.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            let continuation: Int
            var secondRange: ClosedRange<UInt8> = 0x80...0xBF
            switch lead {
            case 0x00...0x7F: index += 1; continue
            case 0xC2...0xDF: continuation = 1
            case 0xE0: continuation = 2; secondRange = 0xA0...0xBF
            case 0xED: continuation = 2; secondRange = 0x80...0x9F
            case 0xE1...0xEF: continuation = 2
            case 0xF0: continuation = 3; secondRange = 0x90...0xBF
            case 0xF1...0xF3: continuation = 3
            case 0xF4: continuation = 3; secondRange = 0x80...0x8F
            default: return index
            }
            for offset in 1...continuation {
                guard index + offset < bytes.count else { return index }
                let range = offset == 1 ? secondRange : 0x80...0xBF
                guard range.contains(bytes[index + offset]) else { return index }
            }
            index += continuation + 1
        }
        return nil
    }
}

/// The shapes RFC 3339 and TOML allow for dates and times, with their ranges checked:
/// 1979-05-27T07:32:00Z, 1979-05-27 07:32:00.999-07:00, 1979-05-27T07:32:00, 1979-05-27, 07:32:00.
private enum DateTimeShape {
    /// Why `text` is no date or time, or nil when it is one.
    static func problem(_ text: ArraySlice<UInt8>) -> String? {
        let characters = Array(text)
        var index = 0
        if characters.count >= 3, characters[2] == ascii(":") {
            return time(characters, &index) ?? end(characters, index)
        }
        if let problem = date(characters, &index) { return problem }
        guard index < characters.count else { return nil }
        guard [ascii("T"), ascii("t"), ascii(" ")].contains(characters[index]) else {
            return "a date is followed by 'T' or a space and a time"
        }
        index += 1
        if let problem = time(characters, &index) { return problem }
        guard index < characters.count else { return nil }
        switch characters[index] {
        case ascii("Z"), ascii("z"):
            index += 1
        case ascii("+"), ascii("-"):
            index += 1
            guard let hours = number(characters, &index, digits: 2), take(ascii(":"), characters, &index),
                  let minutes = number(characters, &index, digits: 2) else {
                return "an offset is Z, or + or - and HH:MM"
            }
            guard hours <= 23, minutes <= 59 else { return "an offset's hours are 00-23 and minutes 00-59" }
        default:
            return "a time ends with Z, an offset such as +02:00, or nothing"
        }
        return end(characters, index)
    }

    private static func date(_ characters: [UInt8], _ index: inout Int) -> String? {
        guard let year = number(characters, &index, digits: 4), take(ascii("-"), characters, &index),
              let month = number(characters, &index, digits: 2), take(ascii("-"), characters, &index),
              let day = number(characters, &index, digits: 2) else {
            return "a date is YYYY-MM-DD"
        }
        guard (1...12).contains(month) else { return "there is no month \(month)" }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { return "month \(month) of \(year) has no day \(day)" }
        return nil
    }

    private static func time(_ characters: [UInt8], _ index: inout Int) -> String? {
        guard let hours = number(characters, &index, digits: 2), take(ascii(":"), characters, &index),
              let minutes = number(characters, &index, digits: 2), take(ascii(":"), characters, &index),
              let seconds = number(characters, &index, digits: 2) else {
            return "a time is HH:MM:SS, with seconds"
        }
        // Second 60 is a leap second, which RFC 3339 allows.
        guard hours <= 23, minutes <= 59, seconds <= 60 else { return "hours are 00-23, minutes 00-59 and seconds 00-60" }
        if index < characters.count, characters[index] == ascii(".") {
            index += 1
            let digitsStart = index
            while index < characters.count, characters[index] >= ascii("0"), characters[index] <= ascii("9") { index += 1 }
            guard index > digitsStart else { return "a fraction of a second needs digits after '.'" }
        }
        return nil
    }

    private static func end(_ characters: [UInt8], _ index: Int) -> String? {
        index == characters.count ? nil : "unexpected '\(String(decoding: characters[index...], as: UTF8.self))' at its end"
    }

    private static func take(_ byte: UInt8, _ characters: [UInt8], _ index: inout Int) -> Bool {
        guard index < characters.count, characters[index] == byte else { return false }
        index += 1
        return true
    }

    /// Exactly `digits` decimal digits.
    private static func number(_ characters: [UInt8], _ index: inout Int, digits: Int) -> Int? {
        guard index + digits <= characters.count else { return nil }
        var value = 0
        for byte in characters[index..<index + digits] {
            guard byte >= ascii("0"), byte <= ascii("9") else { return nil }
            value = value * 10 + Int(byte - ascii("0"))
        }
        index += digits
        return value
    }
}

/// The byte of an ASCII character, for matching bytes by their character.
private func ascii(_ character: Unicode.Scalar) -> UInt8 {
    UInt8(character.value)
}
