import DeskCore
import FoundationEssentials

/// The xstartup templates: `<name>.xstartup` files in an ordered list of directories.
struct TemplateLibrary: Sendable {
    static let fileExtension = ".xstartup"
    let directories: [String]

    /// The portal's page files: portal/portal.html, portal.css and portal.js in the first
    /// template directory that holds all three (each within `portalFileBytes`), and drop.js (the
    /// desktop's page's file drops) from the same folder if it is there, for the web front to
    /// serve. Root's own directories only (deskd.toml's and deskd's --templates).
    func portalFiles() -> (html: String, style: String, script: String, drop: String?)? {
        for directory in directories {
            let folder = directory + "/portal/"
            guard let html = Self.text(folder + "portal.html"), let style = Self.text(folder + "portal.css"),
                  let script = Self.text(folder + "portal.js") else { continue }
            return (html, style, script, Self.text(folder + "drop.js"))
        }
        return nil
    }

    /// Each of the portal's files at most: deskd's setup message to the front holds them all.
    static let portalFileBytes = 256 << 10

    private static func text(_ path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.utf8.count <= portalFileBytes else { return nil }
        return text
    }

    func template(named name: String) throws(DeskError) -> XstartupTemplate {
        let name = try XstartupTemplate.validate(desktopName: name)
        for directory in directories {
            if let text = try? String(contentsOfFile: directory + "/" + name + Self.fileExtension, encoding: .utf8) {
                return XstartupTemplate(name: name, text: text)
            }
        }
        let known = available()
        throw DeskError(.invalidDesktop, "there is no desktop named '\(name)'; choose one of: \(known.isEmpty ? "(no templates installed)" : known.joined(separator: ", ")).")
    }

    /// Every desktop, with what its template needs and whether the host has it. Commands are
    /// looked for on `path`, the sessions' PATH (root's configuration, never the user's).
    func catalog(defaultDesktop: String, path: String, isExecutable: (String) -> Bool, isFile: (String) -> Bool) -> [DesktopInfo] {
        let templates = available().compactMap { try? template(named: $0) }
        var infos = templates.map { describe($0, defaultDesktop: defaultDesktop, path: path, isExecutable: isExecutable, isFile: isFile) }
        // A template that picks among others starts the first of them installed.
        for (index, template) in templates.enumerated() where !template.picks.isEmpty {
            // Never one that cannot start here (a desktop that runs only on Wayland).
            let starts = template.picks.first { pick in infos.contains { $0.name == pick && $0.canStart && $0.starts == nil } }
            infos[index].starts = starts
            // It is installed when one of its picks is; else it names what its last desktop of
            // its own server lacks (the Wayland ones after auto's X desktops are a last resort,
            // not what to install for it).
            let lastX = template.picks.last { pick in templates.contains { $0.name == pick && $0.displayServerKind == template.displayServerKind } } ?? template.picks.last
            if starts == nil, let last = lastX.flatMap({ pick in infos.first { $0.name == pick } }) {
                infos[index].installed = false
                infos[index].missing = last.missing
                infos[index].install = last.install
            }
        }
        return infos
    }

    func describe(_ template: XstartupTemplate, defaultDesktop: String, path: String, isExecutable: (String) -> Bool,
                  isFile: (String) -> Bool) -> DesktopInfo {
        let needs = template.needs
        let directories = path.split(separator: ":").filter { $0.hasPrefix("/") }
        let missing = needs.commands.filter { command in !directories.contains { isExecutable("\($0)/\(command)") } }
        var info = DesktopInfo(name: template.name, installed: missing.isEmpty, isDefault: template.name == defaultDesktop,
                               missing: missing, install: missing.isEmpty ? nil : needs.install)
        // Installed, but with a Wayland session only (GNOME 49 and later, Plasma 6.8): Xvnc
        // cannot serve it, and a start would be a desktop that dies.
        if info.installed, let session = template.x11Session,
           !session.files.contains(where: { isFile(XstartupTemplate.xSessionDirectory + "/" + $0) }) {
            info.unstartable = (session.without ?? "it has no X11 session here")
                + " (no \(session.files.map { XstartupTemplate.xSessionDirectory + "/" + $0 }.joined(separator: " or ")))"
        }
        return info
    }

    func available() -> [String] {
        var names = Set<String>()
        for directory in directories {
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where file.hasSuffix(Self.fileExtension) {
                names.insert(String(file.dropLast(Self.fileExtension.count)))
            }
        }
        return names.sorted()
    }
}
