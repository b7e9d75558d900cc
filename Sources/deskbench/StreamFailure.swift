struct StreamFailure: Error, CustomStringConvertible {
    let description: String
    init(_ text: String) { description = text }
}
