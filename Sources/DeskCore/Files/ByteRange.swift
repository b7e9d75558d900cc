/// A download's HTTP Range header (RFC 9110 §14), for one file of `size` bytes: what a browser
/// or a download manager sends to resume. One range only; a header with several, or one this
/// does not read, is answered with the whole file, as the RFC allows.
public enum ByteRange: Sendable, Equatable {
    /// No usable range: the whole file, 200.
    case whole
    /// Bytes `first...last`, 206.
    case part(first: UInt64, last: UInt64)
    /// A range that starts past the end, 416.
    case unsatisfiable

    public init(header: String?, size: UInt64) {
        guard let header, header.utf8.count <= 200 else {
            self = .whole
            return
        }
        let text = header.trimming(while: { $0 == " " || $0 == "\t" })
        guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else {
            self = .whole
            return
        }
        let spec = text.dropFirst("bytes=".count).trimming(while: { $0 == " " || $0 == "\t" })
        guard let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let from = spec[..<dash], to = spec[spec.index(after: dash)...]
        func number(_ digits: Substring) -> UInt64? {
            guard !digits.isEmpty, digits.utf8.count <= 19, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return UInt64(digits)
        }
        if from.isEmpty {
            // A suffix: the last N bytes.
            guard let count = number(to) else {
                self = .whole
                return
            }
            guard count > 0, size > 0 else {
                self = .unsatisfiable
                return
            }
            self = .part(first: size - min(count, size), last: size - 1)
            return
        }
        guard let first = number(from) else {
            self = .whole
            return
        }
        let last: UInt64
        if to.isEmpty {
            last = size &- 1
        } else {
            guard let end = number(to), end >= first else {
                self = .whole
                return
            }
            last = min(end, size &- 1)
        }
        guard first < size else {
            self = .unsatisfiable
            return
        }
        self = .part(first: first, last: last)
    }
}

extension StringProtocol {
    fileprivate func trimming(while isPadding: (Character) -> Bool) -> Substring {
        let text = Substring(self)
        guard let start = text.firstIndex(where: { !isPadding($0) }) else { return "" }
        let end = text.lastIndex(where: { !isPadding($0) })!
        return text[start...end]
    }
}
