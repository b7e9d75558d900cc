import DeskCore

/// What `start`, `show` and `passwd --json` print: the session object, as `list` shows it, plus
/// `connect`, how to reach it from another machine. Flat, so scripts that read the session's
/// fields from `start --json` keep working.
struct ConnectableSession: Encodable {
    var session: Session
    var connect: ConnectHints?
    /// start --web: the one-time browser link.
    var link: BrowserLink? = nil

    private enum Key: String, CodingKey { case connect, link }

    func encode(to encoder: any Encoder) throws {
        try session.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(connect, forKey: .connect)
        try container.encodeIfPresent(link, forKey: .link)
    }
}
