extension TOMLParser {
    /// A table while the document is read: besides its entries, how it came to be, which decides
    /// whether a later [header] or dotted key may add to it. A class, so that a header can hold on to
    /// the table its keys go into without copying the tree.
    final class TableBuilder {
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
}
