/// `reap`: the sessions without a viewer for at least `idleSeconds`.
public struct ReapRequest: ControlVerb {
    public static let command = Command.reap
    public var idleSeconds: Int
    /// Only this account's sessions.
    public var user: String?
    /// Say what would be killed, kill nothing.
    public var dryRun: Bool

    public init(idleSeconds: Int, user: String? = nil, dryRun: Bool = false) {
        self.idleSeconds = idleSeconds
        self.user = user
        self.dryRun = dryRun
    }

    public init(wire: Request) throws(DeskError) {
        guard let idle = wire.idleSeconds, idle > 0 else {
            throw DeskError(.invalidDuration, "reap needs an idle time, for example: deskctl reap --idle 2h.")
        }
        self.init(idleSeconds: idle, user: wire.user, dryRun: wire.dryRun ?? false)
    }

    public func fill(_ wire: inout Request) {
        wire.idleSeconds = idleSeconds
        wire.user = user
        wire.dryRun = dryRun ? true : nil
    }
}
