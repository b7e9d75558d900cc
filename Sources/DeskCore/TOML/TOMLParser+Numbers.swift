extension TOMLParser {
    /// Everything that starts with a digit, a sign, inf or nan: read as one word first (a date
    /// may hold a space), then sorted out.
    mutating func numberOrDate() throws(TOMLError) -> TOMLValue {
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
}
