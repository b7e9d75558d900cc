/// A key compared by its Unicode scalars. TOML does not normalise keys, so "\u{E9}" and
/// "e\u{301}" are two keys, where String's == (canonical equivalence) would make them one.
struct TOMLKey: Hashable, Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (a: TOMLKey, b: TOMLKey) -> Bool {
        a.text.utf8.elementsEqual(b.text.utf8)
    }

    func hash(into hasher: inout Hasher) {
        for byte in text.utf8 { hasher.combine(byte) }
    }
}
