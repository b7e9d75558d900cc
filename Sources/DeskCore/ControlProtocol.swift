import FoundationEssentials

/// The control socket's wire protocol, version 1. docs/PROTOCOL.md is its reference.
///
/// One request per connection: the client writes one JSON object and a newline, the daemon
/// answers with one JSON object and a newline, then closes.
public enum ControlProtocol {
    public static let version = 1
    /// A request larger than this is refused unread: no legitimate request comes near it.
    public static let maxRequestBytes = 16 * 1024
    public static let defaultSocketPath = "/run/deskd/deskd.sock"
    public static let socketEnvironmentKey = "DESKD_SOCKET"
}

public enum Command: String, Codable, Sendable, CaseIterable {
    case ping, start, list, show, kill, reap, probe, passwd, history, status, logs, url, metrics, desktops
}

/// Every request has a version and a command; the rest depends on the command.
public struct Request: Codable, Sendable, Equatable {
    public var version: Int
    public var command: Command
    /// start: the account to start for (default: the caller). kill: kill all of this user's sessions.
    public var user: String?
    /// start: the display to use. show / kill: the session's display.
    public var display: Int?
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

    public init(command: Command, user: String? = nil, display: Int? = nil, geometry: String? = nil,
                depth: Int? = nil, desktop: String? = nil, all: Bool? = nil, idleSeconds: Int? = nil, dryRun: Bool? = nil,
                viewOnly: Bool? = nil, since: Double? = nil, session: String? = nil, lines: Int? = nil, ttlSeconds: Int? = nil, web: Bool? = nil,
                revoke: Bool? = nil) {
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

public struct ErrorBody: Codable, Sendable, Equatable {
    public var code: DeskError.Code
    public var message: String
    /// What lay under it, when deskd knows; absent otherwise, so older clients read the same
    /// two keys as before.
    public var cause: DeskError.Cause?
}

public struct Response: Codable, Sendable, Equatable {
    public var version: Int = ControlProtocol.version
    public var ok: Bool
    public var error: ErrorBody?
    /// list, kill: the sessions listed or killed. start, show: the one session.
    public var sessions: [Session]?
    /// start: how to connect.
    public var connect: ConnectHints?
    /// ping: the daemon's version.
    public var daemonVersion: String?
    /// probe: what the RFB handshake found.
    public var probe: ProbeReport?
    /// list --all (admins): displays held by X servers deskd did not start.
    public var foreign: [ForeignDisplay]?
    /// history: audit entries the caller may see, oldest first.
    public var history: [AuditEntry]?
    /// status: the daemon's own state.
    public var status: DaemonStatus?
    /// logs: a session's output and how its processes ended.
    public var logs: SessionLogs?
    /// url (and start with `web`): a one-time link that opens the session in a browser.
    public var link: BrowserLink?
    /// url with `revoke`, and passwd: the links and browsers taken back.
    public var revoked: LinkRevocation?
    /// metrics (admins): every metric in Prometheus's text format.
    public var metrics: String?
    /// desktops: every desktop template, installed or not.
    public var desktops: [DesktopInfo]?

    public init(sessions: [Session]? = nil, connect: ConnectHints? = nil, daemonVersion: String? = nil, probe: ProbeReport? = nil,
                history: [AuditEntry]? = nil, status: DaemonStatus? = nil, logs: SessionLogs? = nil, link: BrowserLink? = nil,
                metrics: String? = nil, desktops: [DesktopInfo]? = nil, revoked: LinkRevocation? = nil) {
        self.ok = true
        self.revoked = revoked
        self.desktops = desktops
        self.metrics = metrics
        self.link = link
        self.logs = logs
        self.history = history
        self.status = status
        self.sessions = sessions
        self.connect = connect
        self.daemonVersion = daemonVersion
        self.probe = probe
    }

    public init(error: DeskError) {
        self.ok = false
        self.error = ErrorBody(code: error.code, message: error.message, cause: error.cause)
    }

    public var deskError: DeskError? {
        error.map { DeskError($0.code, $0.message, cause: $0.cause) }
    }
}

public enum DeskVersion {
    public static let current = "0.1.0"
}
