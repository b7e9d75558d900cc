/// What `deskctl list --json` prints: deskd's sessions, and the displays held by X servers deskd
/// did not start (only for `--all` by an admin; empty otherwise), so a script sees both in one object.
public struct SessionList: Codable, Sendable, Equatable {
    public var sessions: [Session]
    public var foreign: [ForeignDisplay]

    public init(sessions: [Session], foreign: [ForeignDisplay]) {
        self.sessions = sessions
        self.foreign = foreign
    }
}
