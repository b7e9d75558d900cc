import DeskCore
import Foundation
import Testing

@Suite struct TerminalTextTests {
    @Test(arguments: [
        ("alice", "alice"),
        ("\u{1B}]0;pwned\u{07}", "\\x1b]0;pwned\\x07"),
        ("a\u{9B}31mred", "a\\x9b31mred"),
        ("evil\u{202E}txt.exe", "evil\\u{202e}txt.exe"),
        ("tab\tkept", "tab\tkept"),
        ("two\nlines", "two\\x0alines"),
        ("nul\u{0}", "nul\\x00"),
        ("del\u{7F}", "del\\x7f"),
        ("héllo wörld ✓", "héllo wörld ✓"),
    ])
    func controlsBecomeVisible(input: String, expected: String) {
        #expect(TerminalText.escape(input) == expected)
    }

    @Test func newlinesMayStay() {
        #expect(TerminalText.escape("a\nb\u{1B}", keepNewlines: true) == "a\nb\\x1b")
    }

    @Test func jsonKeepsItsValuesButNotTheTerminalControls() throws {
        let name = "x\u{9B}31m\u{7F}\u{202E}é"
        let json = String(decoding: try JSONEncoder().encode([name]), as: UTF8.self)
        let escaped = TerminalText.escapeJSON(json)
        #expect(!escaped.unicodeScalars.contains { [0x9B, 0x7F, 0x202E].contains($0.value) })
        #expect(escaped.contains("\\u009b") && escaped.contains("é"))
        #expect(try JSONDecoder().decode([String].self, from: Data(escaped.utf8)) == [name])
    }
}
