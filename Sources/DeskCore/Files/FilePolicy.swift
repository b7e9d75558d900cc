/// The admin's rules for the portal's file transfers (`[files]` in deskd.toml), and the one
/// decision made from them before any helper runs: whether a call may begin now.
public struct FilePolicy: Sendable, Equatable {
    /// false: the portal offers no file calls at all.
    public var enabled = true
    /// Where uploads go unless the user picks another folder of theirs; made on the first upload.
    public var uploadFolder = HomePath(components: [FileName("Downloads")!])
    /// The largest upload.
    public var maxUploadBytes: UInt64 = 16 << 30
    /// Uploads and downloads under way at once, per user and for everyone together.
    public var transfersPerUser = 4
    public var transfers = 32

    public init() {}

    /// Transfers under way now, of this user and in all.
    public struct Load: Sendable, Equatable {
        public var user: Int
        public var all: Int

        public init(user: Int, all: Int) {
            self.user = user
            self.all = all
        }
    }

    /// nil: the call may begin. A listing is no transfer and is limited only by `enabled`.
    public func refusal(of call: FileCall, load: Load) -> FileRefusal? {
        guard enabled else {
            return FileRefusal(.disabled, "File transfers are turned off on this host ([files] enabled in deskd.toml).")
        }
        if case .upload(_, let name, let size, _, _) = call, size > maxUploadBytes {
            return FileRefusal(.tooLarge, "\(name) is \(ByteCount.text(size)), over this host's limit for one upload (\(ByteCount.text(maxUploadBytes))).")
        }
        guard call.direction != nil else { return nil }
        if load.user >= transfersPerUser {
            return FileRefusal(.busy, "You have \(load.user) transfers under way, this host's most per user; wait for one to finish.")
        }
        if load.all >= transfers {
            return FileRefusal(.busy, "This host has \(load.all) transfers under way, its most; try again in a moment.")
        }
        return nil
    }
}

/// A size as a person reads it: "512 bytes", "3.2 MB", "1.0 GB" (powers of 1000, as browsers show).
public enum ByteCount {
    public static func text(_ bytes: UInt64) -> String {
        guard bytes >= 1000 else { return bytes == 1 ? "1 byte" : "\(bytes) bytes" }
        let units = ["kB", "MB", "GB", "TB", "PB"]
        var value = Double(bytes) / 1000
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}

/// How a transfer ended, as the web front saw it.
public enum TransferOutcome: Sendable, Equatable, Codable {
    /// Every byte went (an upload: written, and now to be named).
    case completed
    /// The browser went or cancelled.
    case cancelled
    /// The web front could not go on (a write failed: the disk, the quota), in a sentence.
    case failed(String)
}
