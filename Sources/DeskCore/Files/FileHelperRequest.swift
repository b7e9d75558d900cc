/// What deskd tells deskd-files, in the first record on its socket: whom to become, where their
/// home is (from the account database, never from a request), and the call.
public struct FileHelperRequest: Sendable, Equatable, Codable {
    public var user: String
    public var uid: UInt32
    public var gid: UInt32
    public var home: String
    public var call: FileCall

    public init(user: String, uid: UInt32, gid: UInt32, home: String, call: FileCall) {
        self.user = user
        self.uid = uid
        self.gid = gid
        self.home = home
        self.call = call
    }

    /// The second record of an upload: its bytes are all written; name it. (The end of the
    /// socket without it abandons the upload, which leaves nothing.)
    public static let commit: [UInt8] = Array("commit".utf8)
    /// The largest record either side sends: a listing of `FileListing.limit` entries with long names.
    public static let recordLimit = 960 << 10
}
