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
            if desktop.installed, let why = desktop.unstartable { notes.append("cannot start here: \(why)") }
            return [desktop.name, desktop.installed ? "yes" : "no", notes.joined(separator: "; ")]
        }
        // A desktop with no notes ends at its INSTALLED column, without the padding.
        return SessionTable.align([["DESKTOP", "INSTALLED", "NOTES"]] + rows)
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in String(line[..<(line.lastIndex { $0 != " " }.map(line.index(after:)) ?? line.startIndex)]) }
            .joined(separator: "\n")
    }
}
