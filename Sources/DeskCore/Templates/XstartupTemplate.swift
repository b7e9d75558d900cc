/// An xstartup script with `{{name}}` tokens, rendered by token substitution.
///
/// Every token expands to a single-quoted shell word, so a home directory with a space or a
/// quote in it cannot change what the script does. A token the renderer does not know is an
/// error rather than an empty string: a typo in an admin's template must not start a broken desktop.
public struct XstartupTemplate: Sendable {
    public let name: String
    public let text: String

    public init(name: String, text: String) {
        self.name = name
        self.text = text
    }

    /// Desktop names are file names under a templates directory: keep them to a safe alphabet.
    public static func validate(desktopName name: String) throws(DeskError) -> String {
        let allowed = name.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }
        guard !name.isEmpty, name.utf8.count <= 32, allowed, name.first != "-" else {
            throw DeskError(.invalidDesktop, "'\(name)' is not a desktop name; use lowercase letters, digits, - and _ (for example xterm or gnome).")
        }
        return name
    }

    public func render(_ values: [String: String]) throws(DeskError) -> String {
        var output = ""
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            output += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw DeskError(.invalidDesktop, "template \(name) has an unclosed '{{'; fix the template.")
            }
            let token = rest[open.upperBound..<close.lowerBound].trimming(where: { $0 == " " })
            guard let value = values[token] else {
                throw DeskError(.invalidDesktop, "template \(name) uses unknown token {{\(token)}}; known tokens are \(values.keys.sorted().joined(separator: ", ")).")
            }
            output += Self.shellQuoted(value)
            rest = rest[close.upperBound...]
        }
        return output + rest
    }

    /// The script a session runs: the rendered template, starting in the user's home (as the
    /// user: deskd itself never enters it), and with `preferringUserXstartup`, first handing
    /// over to the user's own executable xstartup if there is one (vncserver's habit): in ~/.vnc,
    /// or where TigerVNC 1.14 and later keep a user's files, ~/.config/tigervnc (XDG). As
    /// TigerVNC does, ~/.vnc wins where both exist.
    public static func sessionScript(_ rendered: String, preferringUserXstartup: Bool) -> String {
        var stanza = "cd \"$HOME\" 2>/dev/null || cd /\n"
        if preferringUserXstartup {
            stanza += """
                # deskd: sessions.user_xstartup is on, so the user's own xstartup runs if there is one.
                if [ -f "$HOME/.vnc/xstartup" ] && [ -x "$HOME/.vnc/xstartup" ]; then exec "$HOME/.vnc/xstartup"; fi
                tigervnc="${XDG_CONFIG_HOME:-$HOME/.config}/tigervnc/xstartup"
                if [ -f "$tigervnc" ] && [ -x "$tigervnc" ]; then exec "$tigervnc"; fi

                """
        }
        guard rendered.hasPrefix("#!"), let newline = rendered.firstIndex(of: "\n") else { return stanza + rendered }
        let afterShebang = rendered.index(after: newline)
        return String(rendered[..<afterShebang]) + stanza + rendered[afterShebang...]
    }

    /// `it's` becomes `'it'\''s'`.
    public static func shellQuoted(_ value: String) -> String {
        "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}

extension Substring {
    fileprivate func range(of needle: String) -> Range<Substring.Index>? {
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(needle) {
                return index..<self.index(index, offsetBy: needle.count)
            }
            index = self.index(after: index)
        }
        return nil
    }
}
