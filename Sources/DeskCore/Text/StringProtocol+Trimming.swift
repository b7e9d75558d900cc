extension StringProtocol {
    /// The text without the characters `isTrimmed` picks (by default white space and line ends)
    /// at either end: Foundation's `trimmingCharacters(in:)` takes a `CharacterSet`, which is not
    /// in FoundationEssentials.
    public func trimming(where isTrimmed: (Character) -> Bool = \.isWhitespace) -> String {
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) }) else { return "" }
        return String(self[first...last])
    }
}
