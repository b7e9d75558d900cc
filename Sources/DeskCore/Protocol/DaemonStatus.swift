import FoundationEssentials

/// What `deskctl status` shows: the daemon, where it listens, what it read, what it runs.
public struct DaemonStatus: Codable, Sendable, Equatable {
    public var daemonVersion: String
    public var pid: Int32
    public var startedAt: Date
    public var uptimeSeconds: Int
    public var socket: String
    /// The configuration file in force; nil when deskd runs on built-in defaults.
    public var configurationFile: String?
    public var sessions: Int
    public var sessionsByState: [String: Int]
    public var users: Int
    public var maxSessionsPerUser: Int?
    public var maxSessions: Int?
    /// Displays in `limits.displays` no deskd session holds.
    public var freeDisplays: Int?
    /// The kernel's MemAvailable, in bytes.
    public var memoryAvailable: Int?
    /// `limits.memory_reserve`, when admission by memory is on.
    public var memoryReserve: Int?
    /// How many more desktops memory admission would let start now (absent when it is off).
    public var sessionsMemoryAllows: Int?
    /// The gateway and the metrics endpoint, where configured; absent when neither is.
    public var listeners: [SideListenerStatus]?

    public init(daemonVersion: String, pid: Int32, startedAt: Date, uptimeSeconds: Int, socket: String, configurationFile: String?,
                sessions: Int, sessionsByState: [String: Int], users: Int, maxSessionsPerUser: Int?, maxSessions: Int?,
                freeDisplays: Int? = nil, memoryAvailable: Int? = nil, memoryReserve: Int? = nil, sessionsMemoryAllows: Int? = nil,
                listeners: [SideListenerStatus]? = nil) {
        self.listeners = listeners
        self.freeDisplays = freeDisplays
        self.memoryAvailable = memoryAvailable
        self.memoryReserve = memoryReserve
        self.sessionsMemoryAllows = sessionsMemoryAllows
        self.daemonVersion = daemonVersion
        self.pid = pid
        self.startedAt = startedAt
        self.uptimeSeconds = uptimeSeconds
        self.socket = socket
        self.configurationFile = configurationFile
        self.sessions = sessions
        self.sessionsByState = sessionsByState
        self.users = users
        self.maxSessionsPerUser = maxSessionsPerUser
        self.maxSessions = maxSessions
    }
}
