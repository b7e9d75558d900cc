import FoundationEssentials

/// What deskd hands a desktop's job: everything deskd-job needs on the compute node to bring the
/// desktop up and reach back, so the node needs no configuration of its own and no shared
/// filesystem. It travels inside the job's script (a here-document on deskd-job's stdin), which
/// Slurm keeps readable by the job's owner and root only: never on a command line, never in the
/// job's name or comment.
public struct JobSpec: Codable, Sendable, Equatable {
    public static let version = 1
    /// deskd-job reads no more than this from its stdin.
    public static let maxBytes = 256 << 10

    public var version: Int
    /// The session's id (32 hex digits): names the hop key and marks the session's processes.
    public var session: String
    /// The hop key, 32 bytes as hex (`HopHandshake`).
    public var key: String
    /// The desktop's VNC password; the job writes Xvnc's password file from it.
    public var password: String
    /// The desktop's view-only VNC password (Xvnc's password file holds both): what the gateway
    /// logs in with for a view-only browser, so Xvnc itself withholds input and the clipboard.
    public var viewOnlyPassword: String?
    /// Where deskd listens for the job's report: the login node's ADDRESS:PORT.
    public var report: String
    /// Xtigervnc on the node.
    public var xvnc: String
    /// Xvnc options beyond the ones deskd-job always sets (desktop size, depth, clipboard).
    public var xvncOptions: [String]
    /// The desktop's startup script, rendered on the login node from the template.
    public var xstartup: String
    /// The template's name, for logs and the desktop's title.
    public var desktop: String
    public var geometry: String
    public var depth: Int
    /// How long before the time limit Slurm warns the job (`--signal=B:USR1@N`), for the message the user sees.
    public var warnSeconds: Int
    /// A Wayland desktop's compositor (`WaylandVNC.Compositor`, by name): the job runs it with
    /// wayvnc instead of Xvnc. Absent for an X desktop, as in a spec from before it existed.
    public var compositor: String?

    public init(session: String, key: String, password: String, viewOnlyPassword: String? = nil, report: String, xvnc: String, xvncOptions: [String], xstartup: String,
                desktop: String, geometry: String, depth: Int, warnSeconds: Int, compositor: WaylandVNC.Compositor? = nil) {
        self.version = Self.version
        self.session = session
        self.key = key
        self.password = password
        self.viewOnlyPassword = viewOnlyPassword
        self.report = report
        self.xvnc = xvnc
        self.xvncOptions = xvncOptions
        self.xstartup = xstartup
        self.desktop = desktop
        self.geometry = geometry
        self.depth = depth
        self.warnSeconds = warnSeconds
        self.compositor = compositor?.rawValue
    }

    /// The spec of a job whose desktop draws on `server` (its kind is all the spec carries of it:
    /// the job makes its own from the spec, `displayServer`).
    public init(session: String, key: String, password: String, viewOnlyPassword: String? = nil, report: String, xvnc: String, xvncOptions: [String], xstartup: String,
                desktop: String, geometry: String, depth: Int, warnSeconds: Int, server: any DisplayServer) {
        self.init(session: session, key: key, password: password, viewOnlyPassword: viewOnlyPassword, report: report, xvnc: xvnc, xvncOptions: xvncOptions,
                  xstartup: xstartup, desktop: desktop, geometry: geometry, depth: depth, warnSeconds: warnSeconds, compositor: (server as? WaylandVNC)?.compositor)
    }

    /// The display server the job starts: the compositor's with wayvnc, else the spec's Xvnc.
    public var displayServer: any DisplayServer {
        compositor.flatMap(WaylandVNC.Compositor.init(rawValue:)).map { WaylandVNC(compositor: $0) } ?? Xvnc(executable: xvnc)
    }

    /// One line of JSON (no newline inside: JSON escapes them), for the job's here-document.
    public func encoded() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// Reads and checks a spec; the sentence says what was wrong.
    public static func decode(_ bytes: [UInt8]) throws(DeskError) -> JobSpec {
        guard bytes.count <= maxBytes else { throw DeskError(.badRequest, "the job's spec is larger than \(maxBytes) bytes.") }
        let notJSON = DeskError(.badRequest, "the job's spec is not the JSON deskd writes; was this job submitted by deskd?")
        // The version alone first: another version's spec need not have this one's fields.
        struct Versioned: Decodable { var version: Int }
        guard let declared = try? JSONDecoder().decode(Versioned.self, from: Data(bytes)).version else { throw notJSON }
        guard declared == version else {
            throw DeskError(.unsupportedVersion, "the job's spec is version \(declared); this deskd-job reads version \(version). Install the same deskd on the login and compute nodes.")
        }
        let spec: JobSpec
        do { spec = try JSONDecoder().decode(JobSpec.self, from: Data(bytes)) } catch { throw notJSON }
        guard SessionSummary.isSessionID(spec.session) else { throw DeskError(.badRequest, "the job's spec names no valid session id.") }
        guard spec.keyBytes != nil else { throw DeskError(.badRequest, "the job's spec has no valid hop key.") }
        guard spec.reportAddress != nil else { throw DeskError(.badRequest, "the job's spec has no ADDRESS:PORT to report to.") }
        guard spec.xvnc.hasPrefix("/") else { throw DeskError(.badRequest, "the job's spec names Xvnc by a relative path.") }
        _ = try Geometry(parsing: spec.geometry)
        _ = try ColorDepth.validate(spec.depth)
        guard !spec.password.isEmpty, spec.password.utf8.count <= 8 else { throw DeskError(.badRequest, "the job's spec has no valid VNC password.") }
        if let compositor = spec.compositor, WaylandVNC.Compositor(rawValue: compositor) == nil {
            throw DeskError(.badRequest, "the job's spec names a compositor this deskd-job does not run (\(compositor.prefix(32))); install the same deskd on the login and compute nodes.")
        }
        return spec
    }

    public var keyBytes: [UInt8]? { HexBytes.decode(key, count: HopHandshake.keyBytes) }

    /// `report` split into an IPv4 address and a port, both in decimal digits as inet_pton and
    /// deskd write them (no sign, no leading zero).
    public var reportAddress: (host: String, port: Int)? {
        func decimal(_ text: Substring, upTo limit: Int) -> Int? {
            guard !text.isEmpty, text.utf8.count <= 5, text.utf8.allSatisfy({ (48...57).contains($0) }), text == "0" || !text.hasPrefix("0"),
                  let value = Int(text), value <= limit else { return nil }
            return value
        }
        guard let colon = report.lastIndex(of: ":"), let port = decimal(report[report.index(after: colon)...], upTo: 65535), port >= 1
        else { return nil }
        let host = String(report[..<colon])
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ decimal($0, upTo: 255) != nil }) else { return nil }
        return (host, port)
    }
}
