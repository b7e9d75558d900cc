import DeskCore
import DeskWeb
import FoundationEssentials

extension FuzzTargets {
    /// A file call's request target and Range header, as a browser sends them: the query's
    /// fields, the path in the home and the range, each with what must hold of it.
    /// Input: the target, a newline, the Range header, a newline, the file's size as text.
    static let fileQuery: Target = { bytes in
        let parts = bytes.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false)
        let target = String(decoding: parts[0], as: UTF8.self)
        if let fields = QueryString.parse(target), let text = fields["path"], let path = HomePath(text) {
            precondition(HomePath(path.text) == path, "a path in a home does not read back as itself: \(text)")
            for name in path.components {
                precondition(name.text != "." && name.text != ".." && !name.text.isEmpty && !name.text.contains("/"), "a path in a home holds \(name)")
            }
            if let (_, last) = path.split, let copy = last.copy(7) { precondition(FileName(copy.text) == copy) }
        }
        let header = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : nil
        let size = parts.count > 2 ? UInt64(String(decoding: parts[2], as: UTF8.self)) ?? 0 : 0
        if case .part(let first, let last) = ByteRange(header: header, size: size) {
            precondition(first <= last && last < size, "the range \(first)-\(last) is not within \(size) bytes")
        }
    }

    /// What deskd reads from deskd-files (which runs as the user, so its words are the user's
    /// to shape) and what deskd-files reads from deskd: each must read back as it was written.
    static let fileRecords: Target = { bytes in
        if let answer = try? JSONDecoder().decode(FileAnswer.self, from: Data(bytes)) {
            let again = try? JSONDecoder().decode(FileAnswer.self, from: JSONEncoder().encode(answer))
            precondition(again == answer, "a helper's answer does not read back as itself")
        }
        if let request = try? JSONDecoder().decode(FileHelperRequest.self, from: Data(bytes)) {
            let again = try? JSONDecoder().decode(FileHelperRequest.self, from: JSONEncoder().encode(request))
            precondition(again == request, "a helper's request does not read back as itself")
        }
    }
}
