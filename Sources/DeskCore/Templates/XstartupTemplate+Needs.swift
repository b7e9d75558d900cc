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
        guard let (commands, install) = wordsAndNote("needs") else { return ([], nil) }
        return (commands, install)
    }

    /// What a `# x11-session:` line says: the desktop runs in Xvnc only where one of these X11
    /// session files is installed (in /usr/share/xsessions), and why not elsewhere. GNOME 49
    /// and later, and Plasma 6.8, install their commands but only a Wayland session:
    ///
    ///     # x11-session: gnome.desktop gnome-xorg.desktop (GNOME 49 and later run only on Wayland)
    public var x11Session: (files: [String], without: String?)? {
        wordsAndNote("x11-session").map { (files: $0.words, without: $0.note) }
    }

    /// Where X11 session files are installed.
    public static let xSessionDirectory = "/usr/share/xsessions"

    /// The desktops a `# picks:` line names, in the order it tries them.
    public var picks: [String] {
        headerValue("picks")?.split(separator: " ").map(String.init) ?? []
    }

    /// `# key: word word (a note)`: the words, and what the parentheses at the end hold.
    private func wordsAndNote(_ key: String) -> (words: [String], note: String?)? {
        guard let line = headerValue(key) else { return nil }
        var words = Substring(line), note: String?
        if let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")"), open < close {
            note = line[line.index(after: open)..<close].trimming()
            words = line[..<open]
        }
        return (words.split(separator: " ").map(String.init), note)
    }

    /// `# key: value` among the comment lines at the top of the template.
    func headerValue(_ key: String) -> String? {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(40) {
            guard line.hasPrefix("#") else { break }
            let body = line.dropFirst().trimming()
            if body.hasPrefix(key + ":") { return body.dropFirst(key.count + 1).trimming() }
        }
        return nil
    }
}
