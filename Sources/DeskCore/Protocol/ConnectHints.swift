public struct ConnectHints: Codable, Sendable, Equatable {
    public var sshTunnel: String
    public var viewer: String
}
