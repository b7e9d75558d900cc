/// A place in a user's home, as a browser names it: relative to the home, "/"-separated, with no
/// empty, "." or ".." component, so it cannot climb out of the home by its spelling. Where it
/// leads is the kernel's to decide, for the user (deskd-files opens it with the user's own
/// credentials, symbolic links and all): the spelling is checked here, the permission there.
public struct HomePath: Sendable, Hashable, CheckedText, CustomStringConvertible {
    public let components: [FileName]

    /// The home itself.
    public static let home = HomePath(components: [])

    public init(components: [FileName]) {
        self.components = components
    }

    /// The most a path may be, in bytes: PATH_MAX, less room for the home it is under.
    public static let maxBytes = 3072

    /// nil for an absolute path, an empty component (a doubled "/"), "." or "..", a NUL, or one
    /// over `maxBytes`. A trailing "/" is allowed, and "" is the home.
    public init?(_ text: String) {
        guard text.utf8.count <= Self.maxBytes, !text.hasPrefix("/") else { return nil }
        var trimmed = Substring(text)
        if trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard !trimmed.isEmpty else {
            self = .home
            return
        }
        var components: [FileName] = []
        for part in trimmed.split(separator: "/", omittingEmptySubsequences: false) {
            guard let name = FileName(String(part)) else { return nil }
            components.append(name)
        }
        self.components = components
    }

    /// As the browser spells it: "" for the home.
    public var text: String { components.map(\.text).joined(separator: "/") }
    public var description: String { text.isEmpty ? "~" : "~/" + text }

    /// The folder it is in, and its last name; nil for the home.
    public var split: (folder: HomePath, name: FileName)? {
        guard let last = components.last else { return nil }
        return (HomePath(components: Array(components.dropLast())), last)
    }

    public func appending(_ name: FileName) -> HomePath {
        HomePath(components: components + [name])
    }

    public static let notOne = "not a path in a home"
}

/// One name in a folder, as a file system takes it: not empty, not "." or "..", no "/" and no
/// NUL, at most 255 bytes (NAME_MAX). Anything else goes, spaces and any script included: it is
/// the user's own folder.
public struct FileName: Sendable, Hashable, CheckedText, CustomStringConvertible {
    public let text: String

    public static let maxBytes = 255

    public init?(_ text: String) {
        guard !text.isEmpty, text != ".", text != "..", text.utf8.count <= Self.maxBytes,
              !text.utf8.contains(UInt8(ascii: "/")), !text.utf8.contains(0) else { return nil }
        self.text = text
    }

    public var description: String { text }

    /// The name "keep both" gives the `number`th copy: "report (1).pdf", "notes (2)",
    /// ".bashrc (1)" (a leading dot is no extension), "photo (1).tar.gz" is not tried: only the
    /// last extension is kept apart, as file managers do. nil when it would be over 255 bytes.
    public func copy(_ number: Int) -> FileName? {
        let dot = text.lastIndex(of: ".").flatMap { $0 == text.startIndex ? nil : $0 }
        let stem = dot.map { String(text[..<$0]) } ?? text
        let suffix = dot.map { String(text[$0...]) } ?? ""
        return FileName("\(stem) (\(number))\(suffix)")
    }

    public static let notOne = "not a file name"
}

/// A type only some strings are (a path in a home, a file name): in JSON, its text, and a text
/// it would not take is refused while decoding, as its initializer refuses it.
public protocol CheckedText: Codable {
    init?(_ text: String)
    var text: String { get }
    /// What a refused text is not, for the decoding error.
    static var notOne: String { get }
}

extension CheckedText {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let checked = Self(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: Self.notOne))
        }
        self = checked
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
