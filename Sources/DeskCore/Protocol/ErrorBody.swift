/// An error reply as it travels: a stable code, a sentence for people, and the cause if known.
public struct ErrorBody: Codable, Sendable, Equatable {
    public var code: DeskError.Code
    public var message: String
    /// What lay under it, when deskd knows; absent otherwise, so older clients read the same
    /// two keys as before.
    public var cause: DeskError.Cause?
}
