// No imports: the TOML parser is pure Swift so that it can be fuzzed on its own (see TOML.swift).

/// Why a document is not TOML, and where: line and column count from 1, the column in
/// Unicode scalars, as an editor shows it.
public struct TOMLError: Error, Equatable, Sendable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    /// A sentence fragment without a final full stop: "a string is not closed".
    public let message: String

    public init(line: Int, column: Int, message: String) {
        (self.line, self.column, self.message) = (line, column, message)
    }

    public var description: String { "line \(line), column \(column): \(message)" }
}
