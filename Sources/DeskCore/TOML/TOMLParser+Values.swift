extension TOMLParser {
    mutating func value(depth: Int) throws(TOMLError) -> TOMLValue {
        let start = position
        guard depth <= TOML.maximumDepth else { throw tooDeep(at: start) }
        guard let byte = peek() else { throw error("expected a value, found the end of the file", at: start) }
        switch byte {
        case ascii("\""), ascii("'"):
            if peek(1) == byte, peek(2) == byte { return .string(try multilineString(byte)) }
            return .string(try string(byte))
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
}
