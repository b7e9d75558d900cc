/// One pass over a document's bytes. The document's structure is read here and in
/// TOMLParser+Tables (headers, keys) and +Values (arrays, inline tables); its scalars in
/// +Strings and +Numbers (with +DateTimeShape); +Characters classifies bytes.
struct TOMLParser {
    let bytes: [UInt8]
    var position = 0
    /// The line of `linePosition`, so that finding the line of each key is linear in all: keys
    /// come in the order of the text, and each count starts where the last one stopped.
    private var linePosition = 0
    private var lineAtPosition = 1
    /// Numbers each [header]'s block of keys, and each inline table, for TableBuilder.Origin.
    var block = 0

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
    mutating func newline() throws(TOMLError) -> Bool {
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

    mutating func skipWhitespace() {
        while let byte = peek(), byte == ascii(" ") || byte == ascii("\t") { position += 1 }
    }

    /// Between the elements of an array: whitespace, comments and newlines alike.
    mutating func skipWhitespaceCommentsAndNewlines() throws(TOMLError) {
        while true {
            skipWhitespace()
            if peek() == ascii("#") { try comment() }
            guard try newline() else { return }
        }
    }

    // MARK: Positions and errors

    func peek(_ offset: Int = 0) -> UInt8? {
        let index = position + offset
        return index < bytes.count ? bytes[index] : nil
    }

    /// The line of `target`, counting on from the last line asked for.
    mutating func lineOf(_ target: Int) -> Int {
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

    func tooDeep(at position: Int) -> TOMLError {
        error("nested more than \(TOML.maximumDepth) levels deep", at: position)
    }

    /// The character at `position` for a message: 'x', a name, or U+XXXX.
    func describe(_ byte: UInt8?) -> String {
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

    func describeEscaped(_ byte: UInt8) -> String {
        byte > 0x20 && byte < 0x7F ? String(Character(Unicode.Scalar(byte))) : "U+\(Self.hex4(byte))"
    }
}

/// The byte of an ASCII character, for matching bytes by their character.
func ascii(_ character: Unicode.Scalar) -> UInt8 {
    UInt8(character.value)
}
