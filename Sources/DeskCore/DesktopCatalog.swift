/// The desktops a host can start, for `deskctl desktops` and for a start that names one whose
/// programs are not installed.
///
/// A template says what it needs in a comment line of its own, which deskd reads and the shell
/// ignores:
///
///     # needs: startxfce4 dbus-launch (apt-get install xfce4 dbus-x11)
///
/// the commands that must be on the sessions' PATH, then in parentheses how to install them.
/// `auto` says instead which desktops it tries, in order (`# picks: gnome kde … xterm`).
public struct DesktopInfo: Codable, Sendable, Equatable {
    public var name: String
    /// Every command the template needs is on the sessions' PATH (a template that says nothing
    /// counts as installed).
    public var installed: Bool
    /// `sessions.default_desktop` names it.
    public var isDefault: Bool
    /// The commands it needs that are not there.
    public var missing: [String]
    /// How to install what is missing, as the template says ("apt-get install xfce4 dbus-x11").
    public var install: String?
    /// For a template that picks among others (`auto`): the desktop it would start now.
    public var starts: String?

    public init(name: String, installed: Bool, isDefault: Bool, missing: [String] = [], install: String? = nil, starts: String? = nil) {
        self.name = name
        self.installed = installed
        self.isDefault = isDefault
        self.missing = missing
        self.install = install
        self.starts = starts
    }

    /// The sentence for a start that names this desktop while it is not installed.
    public func notInstalledSentence(installedOthers: [String]) -> String {
        let others = installedOthers.isEmpty ? "" : ", or start one that is: \(installedOthers.joined(separator: ", "))"
        return "the desktop '\(name)' is not installed on this host (\(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") missing); "
            + "\(install.map { "an admin can add it with: \($0)" } ?? "an admin can install it")\(others) (deskctl desktops lists them)."
    }
}

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

/// `deskctl desktops` for people: one line per desktop, within 80 columns where it can.
public enum DesktopTable {
    public static func render(_ desktops: [DesktopInfo]) -> String {
        let rows = desktops.map { desktop in
            var notes: [String] = []
            if desktop.isDefault { notes.append("the default") }
            if let starts = desktop.starts { notes.append("starts \(starts) here") }
            if !desktop.installed {
                notes.append("needs \(desktop.missing.joined(separator: ", "))" + (desktop.install.map { ": \($0)" } ?? ""))
            }
            return [desktop.name, desktop.installed ? "yes" : "no", notes.joined(separator: "; ")]
        }
        // A desktop with no notes ends at its INSTALLED column, without the padding.
        return SessionTable.align([["DESKTOP", "INSTALLED", "NOTES"]] + rows)
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in String(line[..<(line.lastIndex { $0 != " " }.map(line.index(after:)) ?? line.startIndex)]) }
            .joined(separator: "\n")
    }
}
