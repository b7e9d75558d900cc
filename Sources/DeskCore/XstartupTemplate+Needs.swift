/// A template says what it needs in a comment line of its own, which deskd reads and the shell
/// ignores:
///
///     # needs: startxfce4 dbus-launch (apt-get install xfce4 dbus-x11)
///
/// the commands that must be on the sessions' PATH, then in parentheses how to install them.
/// `auto` says instead which desktops it tries, in order (`# picks: gnome kde … xterm`).
extension XstartupTemplate {
    /// What the template's `# needs:` line says: commands, and how to install them.
    public var needs: (commands: [String], install: String?) {
        guard let line = headerValue("needs") else { return ([], nil) }
        var commands = Substring(line), install: String?
        if let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")"), open < close {
            install = line[line.index(after: open)..<close].trimming()
            commands = line[..<open]
        }
        return (commands.split(separator: " ").map(String.init), install)
    }

    /// The desktops a `# picks:` line names, in the order it tries them.
    public var picks: [String] {
        headerValue("picks")?.split(separator: " ").map(String.init) ?? []
    }

    /// `# key: value` among the comment lines at the top of the template.
    private func headerValue(_ key: String) -> String? {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(40) {
            guard line.hasPrefix("#") else { break }
            let body = line.dropFirst().trimming()
            if body.hasPrefix(key + ":") { return body.dropFirst(key.count + 1).trimming() }
        }
        return nil
    }
}
