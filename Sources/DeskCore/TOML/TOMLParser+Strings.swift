extension TOMLParser {
    /// "…" on one line, with escapes, or '…' as written: `quote` says which.
    mutating func string(_ quote: UInt8) throws(TOMLError) -> String {
        let start = position
        position += 1
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else { throw error("a string is not closed", at: start) }
            switch byte {
            case quote:
                position += 1
                return String(decoding: text, as: UTF8.self)
            case ascii("\\") where quote == ascii("\""):
                try escape(into: &text, multiline: false)
            case ascii("\n"), ascii("\r"):
                throw error("a string is not closed before the end of the line; a string on more lines needs \(Self.threeOf(quote))", at: start)
            default:
                try stringByte(byte, into: &text)
            }
        }
    }

    /// """…""" over lines, with escapes, or '''…''' as written: `quote` says which. A newline
    /// just after the opening quotes is not part of it.
    mutating func multilineString(_ quote: UInt8) throws(TOMLError) -> String {
        let start = position
        position += 3
        _ = try newline()
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else { throw error("a multi-line string is not closed with \(Self.threeOf(quote))", at: start) }
            switch byte {
            case quote:
                if try closingQuotes(quote, into: &text) { return String(decoding: text, as: UTF8.self) }
            case ascii("\\") where quote == ascii("\""):
                try escape(into: &text, multiline: true)
            case ascii("\n"), ascii("\r"):
                _ = try newline()
                text.append(ascii("\n"))
            default:
                try stringByte(byte, into: &text)
            }
        }
    }

    /// """ or ''', for a message.
    private static func threeOf(_ quote: UInt8) -> String {
        String(repeating: Character(Unicode.Scalar(quote)), count: 3)
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
}
