/// A strict reader of JSON (RFC 8259) that reads values where its caller asks for them, for the
/// few replies too hot for Foundation's decoder (`ResponseWire`). It builds no tree: a caller
/// asks for a string, an integer, an object's members, and skips what it does not know.
/// Anything outside the grammar (a fraction where an integer is asked for, a control byte in a
/// string, a lone surrogate, invalid UTF-8, nesting past `maxDepth`) is `Malformed`.
struct JSONScanner {
    struct Malformed: Error, CustomStringConvertible {
        let offset: Int
        let what: String
        var description: String { "malformed JSON at byte \(offset): \(what)" }
    }

    let bytes: [UInt8]
    private(set) var position = 0
    private var depth = 0
    static let maxDepth = 64

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func malformed(_ what: String) -> Malformed {
        Malformed(offset: position, what: what)
    }

    mutating func skipSpace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func next() throws(Malformed) -> UInt8 {
        skipSpace()
        guard position < bytes.count else { throw malformed("it ends early") }
        return bytes[position]
    }

    private mutating func expect(_ byte: UInt8) throws(Malformed) {
        guard try next() == byte else { throw malformed("expected '\(Character(Unicode.Scalar(byte)))'") }
        position += 1
    }

    /// Only space follows.
    mutating func end() throws(Malformed) {
        skipSpace()
        guard position == bytes.count else { throw malformed("more follows the value") }
    }

    /// Each member of an object, in order: `member` is given the key and where the member
    /// began (its key's quote), and must read or skip the value.
    mutating func object(_ member: (inout JSONScanner, String, Int) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        try enter()
        defer { depth -= 1 }
        if try next() == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            _ = try next()
            let start = position
            let key = try string()
            try expect(UInt8(ascii: ":"))
            try member(&self, key, start)
            if try next() == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            return
        }
    }

    /// Each element of an array, in order: `element` must read or skip it.
    mutating func array(_ element: (inout JSONScanner) throws -> Void) throws {
        try expect(UInt8(ascii: "["))
        try enter()
        defer { depth -= 1 }
        if try next() == UInt8(ascii: "]") {
            position += 1
            return
        }
        while true {
            try element(&self)
            if try next() == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            return
        }
    }

    private mutating func enter() throws(Malformed) {
        depth += 1
        guard depth <= Self.maxDepth else { throw malformed("nested more than \(Self.maxDepth) deep") }
    }

    /// nil for `null`, else what `value` reads.
    mutating func nullOr<T>(_ value: (inout JSONScanner) throws -> T) throws -> T? {
        if try next() == UInt8(ascii: "n") {
            try literal("null")
            return nil
        }
        return try value(&self)
    }

    private mutating func literal(_ word: StaticString) throws(Malformed) {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count,
              word.withUTF8Buffer({ $0.elementsEqual(bytes[position..<position + count]) }) else { throw malformed("expected \(word)") }
        position += count
    }

    mutating func bool() throws(Malformed) -> Bool {
        if try next() == UInt8(ascii: "t") {
            try literal("true")
            return true
        }
        try literal("false")
        return false
    }

    mutating func string() throws(Malformed) -> String {
        try expect(UInt8(ascii: "\""))
        let start = position
        var ascii = true
        // The common case: no escape, so the bytes are the string.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                defer { position += 1 }
                // ASCII is UTF-8 as it stands: no validation to pay for (most of a session's strings).
                if ascii { return bytes[start..<position].withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) } }
                return try text(bytes[start..<position])
            }
            ascii = ascii && byte < 0x80
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw malformed("a control byte in a string") }
            position += 1
        }
        var unescaped = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return try text(unescaped[...])
            case UInt8(ascii: "\\"): try unescape(into: &unescaped)
            case ..<0x20: throw malformed("a control byte in a string")
            default: unescaped.append(byte)
            }
        }
        throw malformed("a string is not closed")
    }

    private func text(_ utf8: ArraySlice<UInt8>) throws(Malformed) -> String {
        // Through a buffer pointer: the stdlib's fast path, not its generic one for a slice.
        let text = utf8.withUnsafeBufferPointer { String(validating: $0, as: UTF8.self) }
        guard let text else { throw malformed("a string is not UTF-8") }
        return text
    }

    private mutating func unescape(into out: inout [UInt8]) throws(Malformed) {
        guard position < bytes.count else { throw malformed("a string is not closed") }
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(byte)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw malformed("a lone surrogate")
                }
                position += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw malformed("a lone surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw malformed("a lone surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw malformed("not a Unicode scalar") }
            out.append(contentsOf: String(Character(unicode)).utf8)
        default: throw malformed("an unknown escape")
        }
    }

    private mutating func hex4() throws(Malformed) -> UInt32 {
        guard position + 4 <= bytes.count else { throw malformed("a short \\u escape") }
        var value: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw malformed("a \\u escape that is not hex")
            }
            value = value << 4 | UInt32(digit)
        }
        position += 4
        return value
    }

    /// An integer written as one: no fraction, no exponent, in `T`'s range.
    mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(Malformed) -> T {
        _ = try next()
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let start = position
        var value: T = 0
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
            let digit = T(bytes[position] - UInt8(ascii: "0"))
            let (shifted, over) = value.multipliedReportingOverflow(by: 10)
            // Negative numbers are gathered below zero, so that T.min is reached.
            let (next, over2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !over, !over2 else { throw malformed("an integer out of range") }
            value = next
            position += 1
        }
        guard position > start else { throw malformed("expected an integer") }
        guard bytes[start] != UInt8(ascii: "0") || position == start + 1 else { throw malformed("a leading zero") }
        if position < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[position]) {
            throw malformed("a number that is not an integer")
        }
        return value
    }

    /// Passes over one value of any kind, checking its grammar as it goes.
    mutating func skipValue() throws {
        switch try next() {
        case UInt8(ascii: "{"): try object { scanner, _, _ in try scanner.skipValue() }
        case UInt8(ascii: "["): try array { scanner in try scanner.skipValue() }
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    /// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    private mutating func number() throws(Malformed) {
        func digits(_ scanner: inout JSONScanner) -> Int {
            let start = scanner.position
            while scanner.position < scanner.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(scanner.bytes[scanner.position]) {
                scanner.position += 1
            }
            return scanner.position - start
        }
        func at(_ scanner: JSONScanner, _ set: String) -> Bool {
            scanner.position < scanner.bytes.count && set.utf8.contains(scanner.bytes[scanner.position])
        }
        if at(self, "-") { position += 1 }
        let first = position
        let whole = digits(&self)
        guard whole > 0 else { throw malformed("expected a value") }
        guard bytes[first] != UInt8(ascii: "0") || whole == 1 else { throw malformed("a leading zero") }
        if at(self, ".") {
            position += 1
            guard digits(&self) > 0 else { throw malformed("a fraction without digits") }
        }
        if at(self, "eE") {
            position += 1
            if at(self, "+-") { position += 1 }
            guard digits(&self) > 0 else { throw malformed("an exponent without digits") }
        }
    }
}
