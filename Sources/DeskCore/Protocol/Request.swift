import FoundationEssentials

/// A request as it travels: a version, a command, and the union of every verb's fields, all
/// optional (docs/PROTOCOL.md). Decoded once at deskd's harness into the verb's own type
/// (`ControlRequest`), which says which fields belong to it.
public struct Request: Codable, Sendable, Equatable {
    public var version: Int
    public var command: Command
    /// start: the account to start for (default: the caller). kill: kill all of this user's sessions.
    public var user: String?
    /// start: the display to use. show / kill: the session's display (a number on the wire).
    public var display: Display?
    public var geometry: String?
    public var depth: Int?
    public var desktop: String?
    /// list: every user's sessions (admins). kill: every session the caller may kill.
    public var all: Bool?
    /// reap: sessions without a viewer for at least this many seconds.
    public var idleSeconds: Int?
    /// reap: say what would be killed, kill nothing.
    public var dryRun: Bool?
    /// passwd: set a new view-only password (the full-control one is kept).
    public var viewOnly: Bool?
    /// history: entries at or after this time (seconds since 1970).
    public var since: Double?
    /// logs: the session, by id, instead of `display` (which names the newest session there).
    public var session: String?
    /// logs: the most lines to show of each process's output.
    public var lines: Int?
    /// url, and start with `web`: how long the link may wait for its one use, in seconds.
    public var ttlSeconds: Int?
    /// start: also mint a one-time browser link to the new session, as url does.
    public var web: Bool?
    /// url: take back every unused link to the session and close its browsers, instead of minting one.
    public var revoke: Bool?
    /// url: a link only these accounts may use, each logged in to the portal in the browser that opens it.
    public var viewers: [String]?
    /// url with `revoke`: take back only this share (one link, and the browser it opened).
    public var share: String?
    /// url: list the session's shares (unused links, and browsers showing it) instead of minting one.
    public var shares: Bool?
    /// extend: how much longer the cluster desktop's time limit becomes, in seconds.
    public var extendSeconds: Int?
    /// start: a desktop on a compute node, as a Slurm job, with these choices over the site's defaults.
    public var slurm: SlurmOptions?

    public init(command: Command, user: String? = nil, display: Display? = nil, geometry: String? = nil,
                depth: Int? = nil, desktop: String? = nil, all: Bool? = nil, idleSeconds: Int? = nil, dryRun: Bool? = nil,
                viewOnly: Bool? = nil, since: Double? = nil, session: String? = nil, lines: Int? = nil, ttlSeconds: Int? = nil, web: Bool? = nil,
                revoke: Bool? = nil, slurm: SlurmOptions? = nil, viewers: [String]? = nil, share: String? = nil, shares: Bool? = nil) {
        self.version = ControlProtocol.version
        self.command = command
        self.user = user
        self.display = display
        self.geometry = geometry
        self.depth = depth
        self.desktop = desktop
        self.all = all
        self.idleSeconds = idleSeconds
        self.dryRun = dryRun
        self.viewOnly = viewOnly
        self.since = since
        self.session = session
        self.lines = lines
        self.ttlSeconds = ttlSeconds
        self.web = web
        self.revoke = revoke
        self.slurm = slurm
        self.viewers = viewers
        self.share = share
        self.shares = shares
    }

    /// Decodes and checks the version, turning every failure into a sentence for the client.
    public static func decode(_ bytes: [UInt8]) throws(DeskError) -> Request {
        guard bytes.count <= ControlProtocol.maxRequestBytes else {
            throw DeskError(.requestTooLarge, "request is larger than \(ControlProtocol.maxRequestBytes) bytes; send one JSON object per line.")
        }
        let data = Data(bytes)
        // Check the version before the command, so a newer client hears about the version and not a field.
        struct Envelope: Decodable { var version: Int? }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: data) else {
            throw DeskError(.badRequest, "request is not a JSON object; see docs/PROTOCOL.md for the format.")
        }
        guard envelope.version == ControlProtocol.version else {
            throw DeskError(.unsupportedVersion, "protocol version \(envelope.version.map(String.init) ?? "(missing)") is not supported; this deskd speaks version \(ControlProtocol.version).")
        }
        do {
            return try JSONDecoder().decode(Request.self, from: data)
        } catch {
            throw DeskError(.badRequest, "request is malformed (\(Self.describe(error))); see docs/PROTOCOL.md.")
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "missing '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "wrong type for '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "not valid JSON" : "bad value for '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        default: "unreadable"
        }
    }
}
