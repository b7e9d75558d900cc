/// A desktop the host can start, for `deskctl desktops` and for a start that names one whose
/// programs are not installed (what it needs is its template's `# needs:` line).
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
    /// Installed, but it cannot start here, and why: the desktop runs only on Wayland on this
    /// host (its X11 session is not installed), which Xvnc cannot serve.
    public var unstartable: String?

    /// What a start of it (or `auto`'s pick) may take.
    public var canStart: Bool { installed && unstartable == nil }

    public init(name: String, installed: Bool, isDefault: Bool, missing: [String] = [], install: String? = nil, starts: String? = nil,
                unstartable: String? = nil) {
        self.unstartable = unstartable
        self.name = name
        self.installed = installed
        self.isDefault = isDefault
        self.missing = missing
        self.install = install
        self.starts = starts
    }

    /// The sentence for a start that names this desktop while it is installed but cannot start here.
    public func unstartableSentence(startableOthers: [String]) -> String {
        let others = startableOthers.isEmpty ? "no desktop can start here" : "desktops that start here: \(startableOthers.joined(separator: ", "))"
        return "the desktop '\(name)' cannot start on this host: \(unstartable ?? "it has no X11 session"), and Xvnc serves only X; \(others) (deskctl desktops lists them)."
    }

    /// The sentence for a start that names this desktop while it is not installed.
    public func notInstalledSentence(installedOthers: [String]) -> String {
        let others = installedOthers.isEmpty ? "" : ", or start one that is: \(installedOthers.joined(separator: ", "))"
        return "the desktop '\(name)' is not installed on this host (\(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") missing); "
            + "\(install.map { "an admin can add it with: \($0)" } ?? "an admin can install it")\(others) (deskctl desktops lists them)."
    }
}
