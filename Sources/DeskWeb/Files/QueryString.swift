/// A request target's query, as `name=value&…` with percent-escapes and "+" for a space (what
/// URLSearchParams and encodeURIComponent write). A name given twice keeps its first value;
/// an escape that is not two hex digits, or bytes that are not UTF-8, make the whole query
/// unreadable (nil): a path is never guessed at.
public enum QueryString {
    static let maxBytes = 8192

    public static func parse(_ target: String) -> [String: String]? {
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        var query = target[target.index(after: mark)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        guard query.utf8.count <= maxBytes else { return nil }
        var fields: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { return nil }
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    /// "+" is a space, then each piece is percent-decoded as a path's are (`StaticFiles`): a
    /// "%2B" stays a "+".
    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        for (index, piece) in text.split(separator: "+", omittingEmptySubsequences: false).enumerated() {
            guard let decoded = StaticFiles.percentDecoded(piece) else { return nil }
            if index > 0 { bytes.append(0x20) }
            bytes += decoded
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// `text` for a header's quoted filename*: RFC 8187's UTF-8 percent-encoding.
    static func attachmentName(_ name: String) -> String {
        let plain = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$&+-.^_`|~".utf8)
        let digits = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        for byte in name.utf8 {
            if plain.contains(byte) { encoded.append(byte) } else { encoded += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        }
        // The plain filename= for old clients: ASCII only, no quote or backslash.
        let fallback = String(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" && $0.value != 0x7F ? Character($0) : "_" })
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''\(String(decoding: encoded, as: UTF8.self))"
    }
}
