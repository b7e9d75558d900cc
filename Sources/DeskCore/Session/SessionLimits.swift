/// The admin's limits on who gets a desktop, how many, and of what shape. Every refusal
/// names the limit and the config key that sets it, so the admin knows what to change.
public struct SessionLimits: Sendable, Equatable {
    /// At most this many sessions per user (nil: no limit).
    public var maxSessionsPerUser: Int? = 4
    /// At most this many sessions on the host (nil: only the display range limits it).
    public var maxSessions: Int?
    /// If not empty, only these users may have a desktop (or members of `allowedGroups`).
    public var allowedUsers: [String] = []
    /// If not empty, only members of these groups may have a desktop (or `allowedUsers`).
    public var allowedGroups: [String] = []
    /// If not empty, only these desktops (template names) may be started.
    public var allowedDesktops: [String] = []
    public var minimumGeometry = Geometry.bounds.min
    public var maximumGeometry = Geometry.bounds.max

    public init() {}

    /// The account being given a desktop: its name and the names of every group it is in.
    public struct Account: Sendable {
        public var name: String
        public var groups: [String]

        public init(name: String, groups: [String]) {
            self.name = name
            self.groups = groups
        }
    }

    public func checkAccount(_ account: Account) throws(DeskError) {
        guard !allowedUsers.isEmpty || !allowedGroups.isEmpty else { return }
        if allowedUsers.contains(account.name) || account.groups.contains(where: allowedGroups.contains) { return }
        let who = [
            allowedUsers.isEmpty ? nil : "users \(allowedUsers.joined(separator: ", "))",
            allowedGroups.isEmpty ? nil : "members of \(allowedGroups.joined(separator: ", "))",
        ].compactMap(\.self).joined(separator: " and ")
        throw DeskError(.userNotAllowed, "user \(account.name) may not have a desktop on this host: limits.allowed_users and limits.allowed_groups admit only \(who); ask an admin.")
    }

    public func checkDesktop(_ name: String) throws(DeskError) {
        guard !allowedDesktops.isEmpty, !allowedDesktops.contains(name) else { return }
        throw DeskError(.invalidDesktop, "desktop \(name) is not allowed here (limits.allowed_desktops); choose one of: \(allowedDesktops.joined(separator: ", ")).")
    }

    public func checkGeometry(_ geometry: Geometry) throws(DeskError) {
        let (lo, hi) = (minimumGeometry, maximumGeometry)
        guard geometry.width < lo.width || geometry.height < lo.height || geometry.width > hi.width || geometry.height > hi.height else { return }
        throw DeskError(.invalidGeometry, "geometry \(geometry) is outside this host's limits (limits.min_geometry \(lo), limits.max_geometry \(hi)); ask for a size between them.")
    }

    /// The configured default, shrunk or grown into the bounds: a start that names no size
    /// should not be refused for the size the admin's own defaults chose.
    public func fitting(_ geometry: Geometry) -> Geometry {
        Geometry(
            width: min(max(geometry.width, minimumGeometry.width), maximumGeometry.width),
            height: min(max(geometry.height, minimumGeometry.height), maximumGeometry.height)
        )
    }

    /// `userSessions` and `hostSessions` count what runs now, starts in flight included.
    public func checkCapacity(user: String, userSessions: Int, hostSessions: Int) throws(DeskError) {
        if let limit = maxSessionsPerUser, userSessions >= limit {
            throw DeskError(.limitReached, "user \(user) already has \(userSessions) session\(userSessions == 1 ? "" : "s"), the most limits.max_sessions_per_user (\(limit)) allows; kill one with deskctl kill :N first.")
        }
        if let limit = maxSessions, hostSessions >= limit {
            throw DeskError(.limitReached, "this host already runs \(hostSessions) sessions, the most limits.max_sessions (\(limit)) allows; try again when one ends.")
        }
    }
}
