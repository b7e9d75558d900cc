import DeskCore

extension DisplayServer {
    /// The X displays a server of this type may have left locks on (`leftoverDisplays`), as its
    /// record in the session's private directory `directory` names them; none where it keeps no
    /// record or the file is not a plain one. The directory is the user's: read as a file of
    /// theirs, never followed. deskd's teardown and a cluster job's end both read it here.
    public static func leftoverDisplays(in directory: String) -> [Display] {
        guard let record = leftoverRecord, case .contents(let bytes, _, _) = UntrustedFile.read(directory + "/" + record, limit: 4096) else { return [] }
        return leftoverDisplays(recorded: String(decoding: bytes, as: UTF8.self))
    }
}
