extension TOMLParser {
    static func isDigit(_ byte: UInt8) -> Bool { byte >= ascii("0") && byte <= ascii("9") }

    static func isBareKey(_ byte: UInt8) -> Bool {
        switch byte {
        case ascii("A")...ascii("Z"), ascii("a")...ascii("z"), ascii("0")...ascii("9"), ascii("_"), ascii("-"): true
        default: false
        }
    }

    /// What TOML keeps out of strings and comments: C0 controls but tab, and DEL.
    static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != ascii("\t")) || byte == 0x7F
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case ascii("0")...ascii("9"): byte - ascii("0")
        case ascii("a")...ascii("f"): byte - ascii("a") + 10
        case ascii("A")...ascii("F"): byte - ascii("A") + 10
        default: nil
        }
    }

    static func hex4(_ byte: UInt8) -> String {
        let hex = String(byte, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - hex.count) + hex
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
