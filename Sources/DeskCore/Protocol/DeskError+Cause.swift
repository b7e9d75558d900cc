extension DeskError {
    /// What lay under an error, as data: the sentence has it in words for people, this keeps
    /// it for logs and scripts (`error.cause` on the wire, docs/PROTOCOL.md).
    ///
    /// On the wire an object whose `kind` says which case it is; a client reads a kind it does
    /// not know as `other`, so a later deskd may add kinds within protocol version 1.
    public enum Cause: Equatable, Sendable, Codable, CustomStringConvertible {
        /// A system call failed: what deskd was doing (`mkdir`, `bind`), on which path, and
        /// errno as a number, its symbolic name (`EACCES`, when the C library knows it) and its
        /// strerror text.
        case system(operation: String, path: String?, errno: Int32, name: String?, text: String)
        /// PAM answered `code` (PAM_ACCT_EXPIRED is 13), `text` being pam_strerror's for it.
        case pam(code: Int32, text: String)
        /// A place in a configuration file; lines and columns count from 1, the column in
        /// Unicode scalars as an editor shows it.
        case configuration(file: String?, line: Int?, column: Int?)
        /// Anything else, in a few words.
        case other(String)

        /// One line for a log: `mkdir /run/deskd/by-id/x: EACCES (Permission denied)`,
        /// `PAM 13 (User account has expired)`, `/etc/deskd/deskd.toml:4:9`.
        public var description: String {
            switch self {
            case .system(let operation, let path, let errno, let name, let text):
                "\(operation)\(path.map { " \($0)" } ?? ""): \(name ?? "errno \(errno)") (\(text))"
            case .pam(let code, let text):
                "PAM \(code) (\(text))"
            case .configuration(let file, let line, let column):
                Self.place(file: file, line: line, column: column)
            case .other(let text):
                text
            }
        }

        /// `file:line:column` as compilers write it, or `line 4, column 9` without a file.
        private static func place(file: String?, line: Int?, column: Int?) -> String {
            guard let line else { return file ?? "the configuration" }
            let column = column.map { file == nil ? ", column \($0)" : ":\($0)" } ?? ""
            return file.map { "\($0):\(line)\(column)" } ?? "line \(line)\(column)"
        }

        private enum Key: String, CodingKey {
            case kind, operation, path, errno, errnoName, code, text, file, line, column
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            switch self {
            case .system(let operation, let path, let errno, let name, let text):
                try container.encode("system", forKey: .kind)
                try container.encode(operation, forKey: .operation)
                try container.encodeIfPresent(path, forKey: .path)
                try container.encode(errno, forKey: .errno)
                try container.encodeIfPresent(name, forKey: .errnoName)
                try container.encode(text, forKey: .text)
            case .pam(let code, let text):
                try container.encode("pam", forKey: .kind)
                try container.encode(code, forKey: .code)
                try container.encode(text, forKey: .text)
            case .configuration(let file, let line, let column):
                try container.encode("configuration", forKey: .kind)
                try container.encodeIfPresent(file, forKey: .file)
                try container.encodeIfPresent(line, forKey: .line)
                try container.encodeIfPresent(column, forKey: .column)
            case .other(let text):
                try container.encode("other", forKey: .kind)
                try container.encode(text, forKey: .text)
            }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            let kind = try container.decode(String.self, forKey: .kind)
            // A cause is extra to the reply: one this client cannot read as its kind says (a
            // newer deskd's) is kept as text rather than failing the reply it came with.
            do { self = try Self.decode(kind, from: container) } catch {
                self = .other((try? container.decodeIfPresent(String.self, forKey: .text)) ?? kind)
            }
        }

        private static func decode(_ kind: String, from container: KeyedDecodingContainer<Key>) throws -> Cause {
            switch kind {
            case "system":
                return .system(operation: try container.decode(String.self, forKey: .operation),
                               path: try container.decodeIfPresent(String.self, forKey: .path),
                               errno: try container.decode(Int32.self, forKey: .errno),
                               name: try container.decodeIfPresent(String.self, forKey: .errnoName),
                               text: try container.decode(String.self, forKey: .text))
            case "pam":
                return .pam(code: try container.decode(Int32.self, forKey: .code), text: try container.decode(String.self, forKey: .text))
            case "configuration":
                return .configuration(file: try container.decodeIfPresent(String.self, forKey: .file),
                                      line: try container.decodeIfPresent(Int.self, forKey: .line),
                                      column: try container.decodeIfPresent(Int.self, forKey: .column))
            default:
                // "other", or a kind from a newer deskd: what it says, else its kind.
                return .other(try container.decodeIfPresent(String.self, forKey: .text) ?? kind)
            }
        }
    }
}

extension DeskError.Cause {
    /// Where a TOML document went wrong: its line and column, in `file` when it came from one.
    public init(_ error: TOMLError, file: String? = nil) {
        self = .configuration(file: file, line: error.line, column: error.column)
    }
}
