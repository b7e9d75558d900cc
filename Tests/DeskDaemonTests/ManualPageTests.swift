@testable import DeskDaemon
import Foundation
import Testing

/// docs/man: deskd.toml(5) is the key table's own output, every key is documented where an
/// admin looks (the page and Templates/deskd.toml), and every page renders without a roff warning.
@Suite("The manual pages")
struct ManualPageTests {
    static let manuals = ConfigurationFileTests.repository.appendingPathComponent("docs/man")

    static func page(_ name: String) throws -> String {
        try String(contentsOf: manuals.appendingPathComponent(name), encoding: .utf8)
    }

    @Test("docs/man/deskd.toml.5 is what the key table generates (make man)")
    func configurationPageIsCurrent() throws {
        let page = try Self.page("deskd.toml.5")
        // The date is make man's, not the table's: take the page's own.
        let dateLine = try #require(page.split(separator: "\n").first { $0.hasPrefix(".Dd ") })
        let generated = ConfigurationFile.manual(date: String(dateLine.dropFirst(4)))
        #expect(page == generated, "docs/man/deskd.toml.5 is out of date with ConfigurationFile.keys; run make man")
    }

    @Test("every key the parser accepts is in deskd.toml(5) under its section, and in Templates/deskd.toml")
    func everyKeyIsDocumented() throws {
        let page = try Self.page("deskd.toml.5")
        let example = try String(contentsOf: ConfigurationFileTests.repository.appendingPathComponent("Templates/deskd.toml"), encoding: .utf8)
        for (section, keys) in ConfigurationFile.schema {
            let pageSection = try #require(Self.part(of: page, from: ".Ss [\(section)]\n", to: ".Ss "), "deskd.toml(5) lacks [\(section)]")
            let exampleSection = try #require(Self.part(of: example, from: "[\(section)]\n", to: "\n["), "Templates/deskd.toml lacks [\(section)]")
            for key in keys.keys {
                #expect(pageSection.contains(".It Cm \(key)\n"), "deskd.toml(5) lacks \(section).\(key)")
                #expect(exampleSection.contains("# \(key) = ") || exampleSection.contains("\n\(key) = "), "Templates/deskd.toml lacks \(section).\(key)")
            }
        }
        #expect(Set(ConfigurationFile.sections.map(\.name)) == Set(ConfigurationFile.schema.keys), "a section without keys, or keys without a section in the manual")
        #expect(ConfigurationFile.keys.count == Set(ConfigurationFile.keys.map { "\($0.section).\($0.name)" }).count, "a key listed twice")
    }

    @Test("each documented default is the built-in one", arguments: ConfigurationFile.keys.filter { $0.defaultValue != nil }.map { "\($0.section).\($0.name)" })
    func documentedDefault(key: String) throws {
        let entry = try #require(ConfigurationFile.keys.first { "\($0.section).\($0.name)" == key })
        let configuration = try ConfigurationFile.parse("[\(entry.section)]\n\(entry.name) = \(entry.defaultValue!)\n", path: "deskd.toml")
        #expect(configuration == DaemonConfiguration(), "\(key) = \(entry.defaultValue!) is not the default")
    }

    @Test("the manual's example files parse")
    func examplesParse() throws {
        for example in ConfigurationFile.manualExamples {
            _ = try ConfigurationFile.parse(example.toml, path: "example.toml")
        }
    }

    /// What a person sees: `man` and groff print nothing on stderr for any page (an empty line,
    /// an unknown macro or a bad escape would). Skipped where groff or man-db is not installed.
    @Test(
        "every page renders without a warning",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") && FileManager.default.isExecutableFile(atPath: "/usr/bin/man"),
                 "needs groff and man (scripts/install-deps installs groff-base and man-db)"),
        arguments: ["deskctl.1", "deskd.8", "deskd.toml.5"]
    )
    func rendersWithoutWarnings(page: String) throws {
        let path = Self.manuals.appendingPathComponent(page).path
        for (tool, arguments, environment) in [
            ("/usr/bin/groff", ["-ww", "-z", "-man", path], [String: String]()),
            ("/usr/bin/man", ["--warnings", "-l", path], ["LC_ALL": "C.UTF-8", "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0"]),
        ] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let errors = Pipe()
            process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            process.standardError = errors
            try process.run()
            let warnings = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0 && warnings.isEmpty, "\(tool) \(arguments.joined(separator: " ")): \(warnings)")
        }
    }

    @Test("deskctl(1) and deskd(8) have the sections an admin looks for, and no stray subcommand", arguments: ["deskctl.1", "deskd.8"])
    func handWrittenSections(page: String) throws {
        let text = try Self.page(page)
        for section in [".Sh ENVIRONMENT", ".Sh FILES", ".Sh EXIT STATUS", ".Sh EXAMPLES", ".Sh SEE ALSO"] {
            #expect(text.contains("\n\(section)\n"), "\(page) lacks \(section); see docs/man/\(page).sections")
        }
        #expect(!text.contains(".It Em help"))
        #expect(!text.contains("\n\n"), "an empty line: roff warns")
        if page == "deskd.8" { #expect(!text.contains(".Ar subcommand")) }
    }

    /// The text after `start` up to the next `end` (or the end of the text).
    static func part(of text: String, from start: String, to end: String) -> Substring? {
        guard let opening = text.range(of: start) else { return nil }
        let rest = text[opening.upperBound...]
        return rest.range(of: end).map { rest[..<$0.lowerBound] } ?? rest
    }
}
