extension TOMLParser {
    /// [a.b] or [[a.b]]: defines the table (or the next table of the array) and returns it, for the
    /// keys that follow.
    mutating func header(root: TableBuilder) throws(TOMLError) -> TableBuilder {
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
    mutating func keyValue(into table: TableBuilder, block: Int) throws(TOMLError) {
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
        case let quote? where quote == ascii("\"") || quote == ascii("'"):
            if peek(1) == quote, peek(2) == quote {
                throw error("a multi-line string cannot be a key", at: start)
            }
            return try string(quote)
        default:
            while let byte = peek(), Self.isBareKey(byte) { position += 1 }
            guard position > start else {
                throw error("expected a key, found \(describe(peek())); a key is letters, digits, '_' and '-', or a quoted string", at: start)
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
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
}
