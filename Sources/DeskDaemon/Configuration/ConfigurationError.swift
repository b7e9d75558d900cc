import DeskCore

/// A mistake in the configuration file, with the line it is on (and the column, for TOML's own).
public struct ConfigurationError: Error, CustomStringConvertible {
    public let path: String
    public let line: Int?
    /// Where on the line the TOML parser stopped; nil for a key the schema refused.
    public let column: Int?
    public let message: String

    public init(path: String, line: Int?, column: Int? = nil, message: String) {
        (self.path, self.line, self.column, self.message) = (path, line, column, message)
    }

    /// `path:line: message`, as compilers say it; the column is in `cause`.
    public var description: String {
        "\(path)\(line.map { ":\($0)" } ?? ""): \(message)"
    }

    /// The place, for logs.
    public var cause: DeskError.Cause {
        .configuration(file: path, line: line, column: column)
    }
}
