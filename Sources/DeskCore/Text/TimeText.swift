/// The written forms of a time that deskd reads: a date, then optionally a time, then optionally
/// a zone; what both `--since` and ISO 8601 in JSON need, and nothing of a locale.
enum TimeText {
    /// The civil time written, and the zone's offset in seconds if one was written.
    static func parse(_ text: String, requireTime: Bool) -> (CivilTime, Int?)? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.skip("-"), let month = scanner.digits(2), scanner.skip("-"),
              let day = scanner.digits(2)
        else { return nil }
        var civil = CivilTime(year: year, month: month, day: day)
        if scanner.skip("T") || scanner.skip("t") || (scanner.peek(" ") && scanner.peekDigit(at: 1) && scanner.skip(" ")) {
            guard let hour = scanner.digits(2), scanner.skip(":"), let minute = scanner.digits(2) else { return nil }
            (civil.hour, civil.minute) = (hour, minute)
            if scanner.skip(":") {
                guard let second = scanner.digits(2) else { return nil }
                civil.second = second
                // A fraction of a second is read and dropped: every time deskd keeps is whole seconds.
                if scanner.skip(".") || scanner.skip(",") {
                    guard scanner.digits(1) != nil else { return nil }
                    while scanner.digits(1) != nil {}
                }
            }
        } else if requireTime {
            return nil
        }
        guard civil.isValid else { return nil }
        if scanner.atEnd { return (civil, nil) }
        _ = scanner.skip(" ")
        // Z ends the text: a zone after it ("Z+05:00") is no time at all, not that zone.
        if scanner.skip("Z") || scanner.skip("z") { return scanner.atEnd ? (civil, 0) : nil }
        let sign = scanner.skip("+") ? 1 : scanner.skip("-") ? -1 : 0
        guard sign != 0, let hours = scanner.digits(2), hours <= 23 else { return nil }
        var minutes = 0
        if !scanner.atEnd {
            _ = scanner.skip(":")
            guard let value = scanner.digits(2), value <= 59 else { return nil }
            minutes = value
        }
        guard scanner.atEnd else { return nil }
        return (civil, sign * (hours * 3600 + minutes * 60))
    }

    /// A cursor over ASCII bytes.
    struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        func peek(_ character: Unicode.Scalar) -> Bool { position < bytes.count && bytes[position] == UInt8(ascii: character) }

        func peekDigit(at offset: Int) -> Bool {
            position + offset < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position + offset])
        }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard peek(character) else { return false }
            position += 1
            return true
        }

        /// Exactly `count` decimal digits, as a number.
        mutating func digits(_ count: Int) -> Int? {
            guard (0..<count).allSatisfy({ peekDigit(at: $0) }) else { return nil }
            let value = bytes[position..<position + count].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            position += count
            return value
        }
    }
}
