import DeskCore
import Foundation
import Testing

/// The TOML parser against toml-test's TOML 1.0 cases (TOMLCorpus/README.md), and the things
/// deskd relies on beyond them: lines in errors, the depth limit, linear time.
@Suite("TOML")
struct TOMLTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("TOMLCorpus")

    /// Cases under `kind` (valid or invalid), as "valid/string/escapes".
    static func cases(_ kind: String) -> [String] {
        let root = corpus.appendingPathComponent(kind)
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".toml") }
            .map { "\(kind)/\($0.dropLast(5))" }.sorted()
    }

    static func bytes(_ name: String, _ suffix: String) throws -> [UInt8] {
        Array(try Data(contentsOf: corpus.appendingPathComponent(name + suffix)))
    }

    @Test("the corpus is there", arguments: ["valid", "invalid"])
    func corpusIsThere(kind: String) {
        #expect(Self.cases(kind).count > (kind == "valid" ? 200 : 450))
    }

    @Test("every valid case parses to toml-test's expected value", arguments: cases("valid"))
    func valid(name: String) throws {
        let table: TOMLTable
        do { table = try TOML.parse(utf8: try Self.bytes(name, ".toml")) } catch let error as TOMLError {
            Issue.record("\(name).toml: \(error)")
            return
        }
        let expected = try JSONDecoder().decode(TypedJSON.self, from: Data(Self.bytes(name, ".json")))
        if let difference = TypedJSON.difference(.table(table), expected, at: "") {
            Issue.record("\(name): \(difference)")
        }
    }

    @Test("every invalid case is refused", arguments: cases("invalid"))
    func invalid(name: String) throws {
        let bytes = try Self.bytes(name, ".toml")
        #expect(throws: TOMLError.self, "\(name).toml: \(String(decoding: bytes, as: UTF8.self))") {
            try TOML.parse(utf8: bytes)
        }
    }

    // MARK: What deskd relies on

    func parseError(_ text: String) -> TOMLError? {
        do { _ = try TOML.parse(text); return nil } catch { return error }
    }

    @Test("errors name the line and column, and say what is wrong", arguments: [
        ("a = 1\nb = \"open\n", 2, 5, "a string is not closed"),
        ("[s]\nx = 1\nx = 2\n", 3, 1, "key \"x\" is defined twice"),
        ("[s]\n\n[s]\n", 3, 1, "table [s] is defined twice"),
        ("name \"x\"\n", 1, 6, "expected '=' after the key"),
        ("a = 1\n\n\nb = tru\n", 4, 5, "expected a value"),
        ("a = \"\\q\"\n", 1, 6, "\\q is not an escape TOML knows"),
        ("a = 0123\n", 1, 5, "leading zeros are not allowed"),
        ("a = 9223372036854775808\n", 1, 5, "does not fit in a 64-bit integer"),
        ("a = 1__000\n", 1, 5, "'_' may only stand between two digits"),
        ("a = 2023-02-29\n", 1, 5, "month 2 of 2023 has no day 29"),
        ("a = { b = 1,\n c = 2 }\n", 1, 13, "an inline table must be on one line"),
        ("a = [1, 2\n", 1, 5, "an array is not closed"),
        ("a = 1 b = 2\n", 1, 7, "expected the end of the line after the value, found 'b'"),
        ("a = {}\n[a]\n", 2, 1, "a is already an inline table"),
        ("a = []\n[[a]]\n", 2, 1, "a is already an array"),
        ("[a.b]\nc = 1\n[a]\nb.d = 2\n", 4, 1, "table b is defined by its own [header]"),
        ("a.b = 1\n[a]\n", 2, 1, "table [a] is already defined by dotted keys"),
        ("# über \u{7F}\n", 1, 8, "control character U+007F is not allowed in a comment"),
        ("a = 'x\r'\n", 1, 5, "a string is not closed before the end of the line"),
        ("a = 1\rb = 2\n", 1, 6, "a carriage return must be followed by a line feed"),
        ("a = \"x\n\"\n", 1, 5, "a string on more lines needs \"\"\""),
        ("a = 'x\n'\n", 1, 5, "a string on more lines needs '''"),
        ("a = \"\"\"x\n", 1, 5, "a multi-line string is not closed with \"\"\""),
        ("a = '''x\\n", 1, 5, "a multi-line string is not closed with '''"),
        ("'''k''' = 1\n", 1, 1, "a multi-line string cannot be a key"),
    ])
    func errorPositions(text: String, line: Int, column: Int, message: String) throws {
        let error = try #require(parseError(text), "\(text.debugDescription) parsed")
        #expect(error.line == line && error.column == column, "\(error)")
        #expect(error.message.contains(message), "\(error)")
    }

    @Test("invalid UTF-8 is refused on its line")
    func invalidUTF8() {
        #expect(throws: TOMLError(line: 2, column: 6, message: "the file is not valid UTF-8 here")) {
            try TOML.parse(utf8: Array("a = 1\n# ab ".utf8) + [0xC0, 0x80, 0x0A])
        }
    }

    @Test("each key and table knows the line it was defined on")
    func keyLines() throws {
        let table = try TOML.parse("""
            # deskd.toml
            top = 1

            [limits]
            max_sessions = 3
              "quoted" = 'x'
            dotted.inner = true

            [web.inner]
            [web]
            listen = "off"
            [[runs]]
            n = 1
            [[runs]]
            n = 2
            """)
        #expect(table.keys == ["top", "limits", "web", "runs"])
        #expect(table.line(of: "top") == 2 && table.line(of: "limits") == 4)
        // A table named on the way to another takes the line of its own header, when it has one.
        #expect(table.line(of: "web") == 10 && table.line(of: "runs") == 12)
        let limits = try #require(table["limits"]?.table)
        #expect(limits.keys == ["max_sessions", "quoted", "dotted"])
        #expect(limits.line(of: "max_sessions") == 5 && limits.line(of: "quoted") == 6 && limits.line(of: "dotted") == 7)
        #expect(limits["dotted"]?.table?.line(of: "inner") == 7)
        #expect(table["web"]?.table?.line(of: "inner") == 9)
        #expect(table["runs"]?.array?.compactMap { $0.table?["n"]?.int } == [1, 2])
        #expect(table["runs"]?.array?.last?.table?.line(of: "n") == 15)
    }

    @Test("nesting stops at the limit, in arrays, inline tables, headers and dotted keys")
    func depthLimit() throws {
        let limit = TOML.maximumDepth
        func nested(_ depth: Int) -> [String] {
            [
                "a = " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth),
                "a = " + String(repeating: "{b = ", count: depth) + "1" + String(repeating: "}", count: depth),
                "[" + Array(repeating: "t", count: depth).joined(separator: ".") + "]",
                Array(repeating: "k", count: depth).joined(separator: ".") + " = 1",
            ]
        }
        for text in nested(limit - 1) { #expect(parseError(text) == nil, "\(text.prefix(40))…") }
        for text in nested(limit + 1) + nested(100_000) {
            let error = try #require(parseError(text), "\(text.prefix(40))… parsed")
            #expect(error.message == "nested more than \(limit) levels deep")
        }
    }

    @Test("time grows with the input, not its square")
    func linearTime() throws {
        let clock = ContinuousClock()
        func time(_ count: Int) throws -> Duration {
            var text = "[[t]]\n"
            for index in 0..<count { text += "k\(index) = [\"\(index)\", { a.b = \(index) }, 1.5, 1979-05-27] # \(index)\n[[t]]\n" }
            let start = clock.now
            _ = try TOML.parse(text)
            return clock.now - start
        }
        _ = try time(500)
        let small = try time(3_000), large = try time(30_000)
        // Ten times the input: a linear parser takes about ten times as long, a quadratic one 100.
        #expect(large < small * 30, "3000 lines: \(small), 30000 lines: \(large)")
    }

    @Test("keys are compared by their scalars, as TOML does, not by Swift's canonical equivalence")
    func keysAreNotNormalised() throws {
        let table = try TOML.parse("\"\u{E9}\" = 1\n\"e\u{301}\" = 2\n")
        #expect(table.count == 2)
        #expect(table["\u{E9}"] == .integer(1) && table["e\u{301}"] == .integer(2))
    }

    @Test("values are written back as TOML")
    func descriptions() throws {
        let table = try TOML.parse(#"""
            s = "tab\there \"q\" \u0001"
            i = -5
            f = [1.5, inf, nan, 1e100]
            b = true
            d = 1979-05-27T07:32:00Z
            t = { "a b" = 1, c = [] }
            e = {}
            """#)
        #expect(table["s"]?.description == #""tab\there \"q\" \u0001""#)
        #expect(table["i"]?.description == "-5")
        #expect(table["f"]?.description == "[1.5, inf, nan, 1e+100]")
        #expect(table["b"]?.description == "true")
        #expect(table["d"]?.description == "1979-05-27T07:32:00Z")
        #expect(table["t"]?.description == #"{ "a b" = 1, c = [] }"#)
        #expect(table["e"]?.description == "{}")
        #expect(try TOML.parse("v = \(table["t"]?.description ?? "")")["v"] == table["t"])
    }

    @Test("the accessors give a value of their type only")
    func accessors() {
        #expect(TOMLValue.integer(5).int == 5 && TOMLValue.integer(5).string == nil)
        #expect(TOMLValue.string("5").string == "5" && TOMLValue.string("5").int == nil)
        #expect(TOMLValue.boolean(true).bool == true && TOMLValue.float(1).bool == nil)
        #expect(TOMLValue.array([.integer(1)]).array == [.integer(1)])
        #expect(TOMLValue.table(["a": .integer(1)]).table?["a"] == .integer(1))
    }
}

/// toml-test's expected output: tables and arrays as JSON, every other value as
/// {"type": "integer", "value": "42"}.
indirect enum TypedJSON: Decodable {
    case value(type: String, value: String)
    case table([String: TypedJSON])
    case array([TypedJSON])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let leaf = try? container.decode([String: String].self), leaf.count == 2, let type = leaf["type"], let value = leaf["value"] {
            self = .value(type: type, value: value)
        } else if let array = try? container.decode([TypedJSON].self) {
            self = .array(array)
        } else {
            self = .table(try container.decode([String: TypedJSON].self))
        }
    }

    /// Where `actual` differs from `expected`, or nil.
    static func difference(_ actual: TOMLValue, _ expected: TypedJSON, at path: String) -> String? {
        switch (actual, expected) {
        case (.table(let table), .table(let wanted)):
            guard Set(table.keys) == Set(wanted.keys) else { return "\(path): keys \(table.keys.sorted()), expected \(wanted.keys.sorted())" }
            for key in table.keys.sorted() {
                guard let value = table[key], let want = wanted[key] else { continue }
                if let difference = difference(value, want, at: "\(path).\(key)") { return difference }
            }
            return nil
        case (.array(let elements), .array(let wanted)):
            guard elements.count == wanted.count else { return "\(path): \(elements.count) elements, expected \(wanted.count)" }
            for (index, (element, want)) in zip(elements, wanted).enumerated() {
                if let difference = difference(element, want, at: "\(path)[\(index)]") { return difference }
            }
            return nil
        case (_, .value(let type, let value)):
            return matches(actual, type: type, value: value) ? nil : "\(path): \(actual), expected \(type) \(value)"
        default:
            return "\(path): \(actual), expected \(expected)"
        }
    }

    static func matches(_ actual: TOMLValue, type: String, value: String) -> Bool {
        switch (actual, type) {
        case (.string(let text), "string"): return text.unicodeScalars.elementsEqual(value.unicodeScalars)
        case (.integer(let number), "integer"): return Int(value) == number
        case (.boolean(let truth), "bool"): return value == String(truth)
        case (.float(let number), "float"):
            guard let wanted = Double(value) else { return false }
            return number == wanted || (number.isNaN && wanted.isNaN)
        case (.datetime(let text), _):
            return kind(ofDateTime: text) == type && normalised(text) == normalised(value)
        default: return false
        }
    }

    /// toml-test's name for the four kinds of date and time.
    static func kind(ofDateTime text: String) -> String {
        let characters = Array(text)
        if characters.count > 2, characters[2] == ":" { return "time-local" }
        if characters.count == 10 { return "date-local" }
        let offset = characters.dropFirst(19).contains { "Zz+-".contains($0) }
        return offset ? "datetime" : "datetime-local"
    }

    /// One spelling of a date-time: T and Z in capitals, a fraction without trailing zeros.
    static func normalised(_ text: String) -> String {
        var characters = Array(text.uppercased())
        if characters.count > 10, characters[10] == " " { characters[10] = "T" }
        guard let dot = characters.firstIndex(of: ".") else { return String(characters) }
        var end = dot + 1
        while end < characters.count, characters[end].isNumber { end += 1 }
        var fraction = characters[(dot + 1)..<end]
        while fraction.last == "0" { fraction = fraction.dropLast() }
        return String(characters[..<dot]) + (fraction.isEmpty ? "" : "." + String(fraction)) + String(characters[end...])
    }
}
