import FoundationEssentials

/// `history`: the audit trail's entries the caller may see.
public struct HistoryRequest: ControlVerb {
    public static let command = Command.history
    /// Only entries by or about this user (another user's: admins only).
    public var user: String?
    /// Only entries at or after this time.
    public var since: Date?

    public init(user: String? = nil, since: Date? = nil) {
        self.user = user
        self.since = since
    }

    public init(wire: Request) throws(DeskError) {
        self.init(user: wire.user, since: wire.since.map(Date.init(timeIntervalSince1970:)))
    }

    public func fill(_ wire: inout Request) {
        wire.user = user
        wire.since = since?.timeIntervalSince1970
    }
}
