extension TOMLParser {
    /// The shapes RFC 3339 and TOML allow for dates and times, with their ranges checked:
    /// 1979-05-27T07:32:00Z, 1979-05-27 07:32:00.999-07:00, 1979-05-27T07:32:00, 1979-05-27, 07:32:00.
    enum DateTimeShape {
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
}
