import DeskCore

extension ConfigurationFile {
    /// `[files]`: the portal's uploads and downloads, which deskd-files carries out as the user.
    static let fileKeys: [Key] = [
        Key("files", "enabled", takes: "true or false", default: "true",
            "The portal offers each desktop's owner their own files: a folder view of their home, downloads (a folder as a tar archive) and uploads. Every file is opened by deskd-files running as the owner, so the file system's permissions, quotas and ACLs decide; false offers none."
        ) { c, v throws(Reason) in c.files.enabled = try bool(v) },
        Key("files", "upload_folder", takes: "a folder in the home, such as \"Downloads\"", default: "\"Downloads\"",
            "Where the portal's uploads go unless the user opens another folder of theirs; made on the first upload if the user has none."
        ) { c, v throws(Reason) in
            let text = try string(v)
            guard let path = HomePath(text) else { throw Reason("must name a folder inside the home, as \"Downloads\" or \"Desktop/uploads\" (no leading /, no . or ..), not \(v)") }
            c.files.uploadFolder = path
        },
        Key("files", "max_upload_size", takes: "a size of at least 64M: bytes, or a number with K, M, G or T", default: "\"16G\"",
            "The largest file one upload may bring in; a larger one is refused before a byte travels."
        ) { c, v throws(Reason) in c.files.maxUploadBytes = UInt64(try byteSize(v)) },
        Key("files", "transfers_per_user", takes: "a whole number from 1 to 64", default: "4",
            "Uploads and downloads one user may have under way at once."
        ) { c, v throws(Reason) in c.files.transfersPerUser = try positive(v, max: 64) },
        Key("files", "transfers", takes: "a whole number from 1 to 1024", default: "32",
            "Uploads and downloads under way at once for every user together."
        ) { c, v throws(Reason) in c.files.transfers = try positive(v, max: 1024) },
    ]
}
