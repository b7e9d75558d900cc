import DeskCore

/// Value readers for the key table, each failing with the end of a sentence
/// ("must be true or false, not 3"), which the parser puts after the key's name.
extension ConfigurationFile {
    struct Reason: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    static func string(_ v: TOMLValue) throws(Reason) -> String {
        guard let text = v.string else { throw Reason("must be a string in quotes, not \(v)") }
        return text
    }

    static func strings(_ v: TOMLValue) throws(Reason) -> [String] {
        guard let array = v.array else { throw Reason("must be a list of strings, like [\"a\", \"b\"]") }
        var result: [String] = []
        for element in array {
            guard let text = element.string else { throw Reason("must be a list of strings, like [\"a\", \"b\"]") }
            result.append(text)
        }
        return result
    }

    /// A size in bytes: a whole number, or one with K, M, G or T (powers of 1024), as "4G".
    static func byteSize(_ v: TOMLValue) throws(Reason) -> Int {
        let problem = Reason("must be a size such as \"512M\" or \"4G\" (K, M, G, T) or a number of bytes, at least 64M, not \(v)")
        var size: Int
        if let n = v.int {
            size = n
        } else if let text = v.string, let unit = text.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][unit.uppercased()],
                  let n = Int(text.dropLast()), n > 0 {
            size = n << (10 * power)
        } else {
            throw problem
        }
        guard size >= 64 << 20 else { throw problem }
        return size
    }

    static func bool(_ v: TOMLValue) throws(Reason) -> Bool {
        guard let value = v.bool else { throw Reason("must be true or false, not \(v)") }
        return value
    }

    static func positive(_ v: TOMLValue, max: Int) throws(Reason) -> Int {
        guard let n = v.int, n >= 1, n <= max else { throw Reason("must be a whole number from 1 to \(max), not \(v)") }
        return n
    }

    /// A count of sessions; its ceiling, the number of displays, is checked in crossCheck,
    /// where limits.displays is known whichever order the file gives them in.
    static func sessionCount(_ v: TOMLValue) throws(Reason) -> Int {
        guard let n = v.int, n >= 1 else { throw Reason("must be a whole number of sessions, 1 or more, not \(v)") }
        return n
    }

    static func nonNegative(_ v: TOMLValue, max: Int) throws(Reason) -> Int {
        guard let n = v.int, n >= 0, n <= max else { throw Reason("must be a whole number from 0 to \(max), not \(v)") }
        return n
    }

    static func absolutePath(_ v: TOMLValue) throws(Reason) -> String {
        try checkedAbsolute(try string(v))
    }

    static func checkedAbsolute(_ text: String) throws(Reason) -> String {
        guard text.hasPrefix("/"), !text.contains("\0"), !text.split(separator: "/").contains("..") else {
            throw Reason("must be an absolute path without '..', not \"\(text)\"")
        }
        return text
    }

    static func name(_ v: TOMLValue) throws(Reason) -> String {
        try checkedName(try string(v))
    }

    static func checkedName(_ text: String) throws(Reason) -> String {
        guard !text.isEmpty, text.count <= 32, !text.hasPrefix("-"),
              text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) })
        else { throw Reason("must hold user or group names (letters, digits, '.', '_', '-'), not \"\(text)\"") }
        return text
    }

    static func oneOf(_ v: TOMLValue, _ choices: [String]) throws(Reason) -> String {
        let text = try string(v)
        guard choices.contains(text) else { throw Reason("must be one of \(choices.joined(separator: ", ")), not \"\(text)\"") }
        return text
    }

    static func duration(_ v: TOMLValue) throws(Reason) -> Int {
        if let n = v.int, n > 0 { return n }
        return try desk(v) { text throws(DeskError) in try IdleDuration.seconds(parsing: text) }
    }

    /// A string checked by one of the core's parsers, whose sentence becomes the reason.
    static func desk<T>(_ v: TOMLValue, _ parse: (String) throws(DeskError) -> T) throws(Reason) -> T {
        try desk(try string(v), parse)
    }

    static func desk<T>(_ text: String, _ parse: (String) throws(DeskError) -> T) throws(Reason) -> T {
        do { return try parse(text) } catch {
            throw Reason("is wrong: \(error.message.trimming(where: { $0 == "." }))")
        }
    }

    static func displayRange(_ v: TOMLValue) throws(Reason) -> ClosedRange<Int> {
        let text = try string(v)
        let parts = text.split(separator: "-").map { $0.trimming() }
        let supported = Display.supportedRange
        guard parts.count == 2, let lo = Int(parts[0]), let hi = Int(parts[1]), lo >= supported.lowerBound, hi <= supported.upperBound, lo <= hi else {
            throw Reason("must be a range such as \"1-99\" within \(supported.lowerBound)-\(supported.upperBound), not \"\(text)\"")
        }
        return lo...hi
    }

    static func slurmName(_ v: TOMLValue, what: String, flag: String) throws(Reason) -> String {
        try desk(v) { text throws(DeskError) in
            try SlurmOptions.checkName(text, what: what, flag: flag)
            return text
        }
    }

    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && Int(part).map { (0...255).contains($0) } == true
        }
    }

    /// "off", or an IPv4 address (or localhost) and a port.
    static func listenAddress(_ value: TOMLValue, example: String) throws(Reason) -> ListenAddress? {
        let text = try string(value)
        if text == "off" { return nil }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port),
              isIPv4(String(parts[0])) || parts[0] == "localhost" else {
            throw Reason("must be \"off\" or an IPv4 address and a port such as \"\(example)\", not \"\(text)\"")
        }
        return ListenAddress(host: parts[0] == "localhost" ? "127.0.0.1" : String(parts[0]), port: port)
    }
}
