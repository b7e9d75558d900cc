import DeskCore
import FoundationEssentials

/// The xstartup templates: `<name>.xstartup` files in an ordered list of directories.
struct TemplateLibrary: Sendable {
    static let fileExtension = ".xstartup"
    let directories: [String]

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
