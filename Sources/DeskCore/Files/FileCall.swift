/// What a portal page asks of its owner's files, through deskd: every one is carried out by
/// deskd-files as that user (never by deskd, never by deskd-web).
public enum FileCall: Sendable, Equatable, Codable {
    /// A folder's entries.
    case list(HomePath)
    /// A file, opened for reading (the web front streams it, ranges and all), or a folder as a
    /// tar archive made as it is read.
    case download(HomePath)
    /// A new file `name` in `folder`, `size` bytes long, written where no one sees it until it
    /// is whole (`FileAnswer.uploadReady`, then a commit). `createFolder`: the admin's upload
    /// folder, made if the user has none yet.
    case upload(folder: HomePath, name: FileName, size: UInt64, exists: ExistingName, createFolder: Bool)

    /// What the audit trail and the metrics call its direction.
    public var direction: FileDirection? {
        switch self {
        case .list: nil
        case .download: .download
        case .upload: .upload
        }
    }
}

public enum FileDirection: String, Sendable, Codable, CaseIterable {
    case upload, download
}

/// What an upload does when its name is taken.
public enum ExistingName: String, Sendable, Codable, CaseIterable {
    /// Refuses (`FileRefusal.Reason.exists`): the page asks its user.
    case ask
    /// Takes the first free "name (N).ext".
    case keep
    /// Replaces the file, in one rename, once the new one is whole.
    case replace
}

/// One entry of a folder, as `lstat` saw it; a symbolic link says what it leads to (for the
/// user, who may be unable to follow it: then nil).
public struct FileEntry: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable {
        case file, directory, link, other
    }

    public var name: String
    public var type: Kind
    public var size: UInt64
    /// Seconds since 1970.
    public var modified: Int64
    public var target: Kind?

    public init(name: String, type: Kind, size: UInt64, modified: Int64, target: Kind? = nil) {
        self.name = name
        self.type = type
        self.size = size
        self.modified = modified
        self.target = target
    }
}

extension FileEntry {
    /// At most the bytes this entry takes in a listing's JSON: its name escaped at worst (a
    /// control character as \u00XX), its other fields at their longest.
    public var wireBytesAtMost: Int {
        name.utf8.reduce(128) { $0 + ($1 == 0x22 || $1 == 0x5C || $1 == 0x2F ? 2 : $1 < 0x20 ? 6 : 1) }
    }
}

public struct FileListing: Sendable, Equatable, Codable {
    public var path: HomePath
    public var entries: [FileEntry]
    /// More entries than a listing carries (`limit`): the rest are left out.
    public var truncated: Bool
    /// Where uploads go unless the user picks another folder (deskd's `[files] upload_folder`,
    /// set by deskd on its way to the page).
    public var uploadFolder: HomePath?

    /// A listing's most entries, and the most bytes they may take (`FileEntry.wireBytesAtMost`):
    /// one answer is a record on deskd's sockets (under 1 MiB), so long names mean fewer entries.
    public static let limit = 4000
    public static let byteBudget = 768 << 10

    public init(path: HomePath, entries: [FileEntry], truncated: Bool) {
        self.path = path
        self.entries = entries
        self.truncated = truncated
    }
}

/// deskd-files' answer to a `FileCall` (and to an upload's commit), which deskd passes on to
/// the web front with the descriptor it came with.
public enum FileAnswer: Sendable, Equatable, Codable {
    case listing(FileListing)
    /// Comes with the file, open for reading.
    case file(name: FileName, size: UInt64, modified: Int64)
    /// Comes with a pipe's reading end: tar writes the folder into it as the user.
    case archive(name: FileName)
    /// Comes with the new file, open for writing and invisible until committed.
    case uploadReady
    /// The upload is in its folder under `name`.
    case committed(name: FileName)
    case refused(FileRefusal)
}

/// Why a file call was refused, in one sentence for the person who asked.
public struct FileRefusal: Sendable, Equatable, Codable, Error {
    public enum Reason: String, Sendable, Codable {
        case badName = "bad-name"
        case notFound = "not-found"
        case notPermitted = "not-permitted"
        case exists
        case diskFull = "disk-full"
        case quota
        case tooLarge = "too-large"
        case busy
        case notOwner = "not-owner"
        case loggedOut = "logged-out"
        case disabled
        case failed
    }

    public var reason: Reason
    public var sentence: String

    public init(_ reason: Reason, _ sentence: String) {
        self.reason = reason
        self.sentence = sentence
    }

    /// The HTTP status the portal answers with.
    public var status: Int {
        switch reason {
        case .badName: 400
        case .loggedOut: 401
        case .notFound: 404
        case .notPermitted, .notOwner, .disabled: 403
        case .exists: 409
        case .tooLarge: 413
        case .busy: 429
        case .diskFull, .quota: 507
        case .failed: 500
        }
    }
}
