// No imports, not even FoundationEssentials: what this parser reads sets deskd's limits, so it is
// kept small enough to read whole and to fuzz on its own (the TOML*.swift files, which import
// nothing either: TOMLParser and its extensions, TOMLValue, TOMLTable, TOMLKey and TOMLError).

/// TOML 1.0.0 (https://toml.io/en/v1.0.0). Tested against toml-test's 1.0 cases
/// (Tests/DeskCoreTests/TOMLCorpus).
///
/// One pass over the UTF-8 bytes, linear in their number. Recursion is only into arrays and
/// inline tables, and nesting of every kind (tables, arrays, inline tables, dotted keys) stops at
/// `maximumDepth`, so hostile input cannot exhaust the stack.
public enum TOML {
    /// Levels of nesting a document may have: `a.b.c = 1` is three, `x = [[1]]` is three.
    public static let maximumDepth = 128

    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        var parser = TOMLParser(bytes: Array(text.utf8))
        return try parser.document()
    }

    /// Bytes that are meant to be UTF-8; anything else is refused with the line it is on.
    public static func parse(utf8 bytes: [UInt8]) throws(TOMLError) -> TOMLTable {
        var parser = TOMLParser(bytes: bytes)
        if let bad = TOMLParser.firstInvalidUTF8(bytes) {
            throw parser.error("the file is not valid UTF-8 here", at: bad)
        }
        return try parser.document()
    }
}
