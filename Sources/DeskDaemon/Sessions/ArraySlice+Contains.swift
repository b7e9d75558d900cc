extension ArraySlice<UInt8> {
    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count, let first = needle.first else { return needle.isEmpty }
        var index = startIndex
        let last = endIndex - needle.count
        while index <= last {
            if self[index] == first, self[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}
