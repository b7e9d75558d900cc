import FoundationEssentials

/// The control socket's replies as bytes: Foundation's coders for everything but the sessions,
/// which are written and read here by hand.
///
/// Why: a `list --all` of 200 sessions was mostly JSON on both ends of the socket. Foundation's
/// coders cost about 7 µs a session in deskd and 13 µs in deskctl, through their containers,
/// dictionaries of keys and boxing, so the list grew 1.7× from 40 sessions to 200 while
/// everything else in it stayed flat (docs/BENCHMARKS.md, "Hundreds of desktops"). These
/// write and read the same JSON (the same keys and values; the order of keys is no part of
/// it) at a small part of that. Fuzz target `response-wire` holds them to Foundation's:
/// whatever both read, they read alike, and what this writes Foundation reads back the same.
public enum ResponseWire {
    public static func encode(_ response: Response) throws -> [UInt8] {
        guard let sessions = response.sessions else { return Array(try JSONEncoder.deskWire.encode(response)) }
        var rest = response
        rest.sessions = nil
        var bytes = Array(try JSONEncoder.deskWire.encode(rest))
        // `{…}` with at least `ok` and `version` in it: the sessions go in before its end.
        guard bytes.count >= 2, bytes.last == UInt8(ascii: "}") else { return Array(try JSONEncoder.deskWire.encode(response)) }
        bytes.removeLast()
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        bytes.reserveCapacity(bytes.count + sessions.count * 480)
        bytes.append(contentsOf: #""sessions":["#.utf8)
        for (index, session) in sessions.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            SessionJSON.write(session, into: &bytes)
        }
        bytes.append(contentsOf: "]}".utf8)
        return bytes
    }

    /// A reply as `encode` (or any JSON writer) wrote it. The sessions are read here; the rest
    /// of the object, with them taken out, by Foundation's decoder.
    public static func decode(_ bytes: [UInt8]) throws -> Response {
        var scanner = JSONScanner(bytes)
        var others: [Range<Int>] = []
        var sessions: [Session]?
        var sawSessions = false
        try scanner.object { scanner, key, start in
            guard key == "sessions" else {
                try scanner.skipValue()
                others.append(start..<scanner.position)
                return
            }
            guard !sawSessions else { throw scanner.malformed("\"sessions\" twice") }
            sawSessions = true
            sessions = try scanner.nullOr { scanner in
                var list: [Session] = []
                try scanner.array { scanner in list.append(try SessionJSON.read(&scanner)) }
                return list
            }
        }
        try scanner.end()
        guard sawSessions else { return try JSONDecoder.desk.decode(Response.self, from: Data(bytes)) }
        var rest: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in others.enumerated() {
            if index > 0 { rest.append(UInt8(ascii: ",")) }
            rest.append(contentsOf: bytes[member])
        }
        rest.append(UInt8(ascii: "}"))
        var response = try JSONDecoder.desk.decode(Response.self, from: Data(rest))
        response.sessions = sessions
        return response
    }
}

/// One `Session` as JSON, by hand: the keys and values of `Session.encode(to:)`.
enum SessionJSON {
    static func write(_ session: Session, into out: inout [UInt8]) {
        var writer = JSONWriting(out: out)
        out = []
        writer.open()
        writer.member("id", session.id)
        writer.member("user", session.user)
        writer.member("uid", session.uid)
        writer.member("gid", session.gid)
        writer.member("display", session.display.number)
        if let port = session.rfbPort { writer.member("rfbPort", port) }
        if let socket = session.rfbSocket { writer.member("rfbSocket", socket) }
        writer.member("pid", session.pid)
        writer.member("pidStartTicks", session.pidStartTicks)
        writer.member("executable", session.executable)
        if let pid = session.desktopPid { writer.member("desktopPid", pid) }
        writer.member("state", session.state.rawValue)
        writer.member("startedAt", InternetTime.format(session.startedAt))
        writer.member("desktop", session.desktop)
        writer.member("geometry", session.geometry.description)
        writer.member("depth", session.depth)
        writer.member("clients", session.clients)
        if let time = session.lastClientAt { writer.member("lastClientAt", InternetTime.format(time)) }
        writer.member("idleSeconds", session.idleSeconds)
        if let password = session.password { writer.member("password", password) }
        if let password = session.viewOnlyPassword { writer.member("viewOnlyPassword", password) }
        if let job = session.slurm {
            writer.key("slurm")
            writer.open()
            writer.member("jobId", job.jobId)
            if let node = job.node { writer.member("node", node) }
            if let partition = job.partition { writer.member("partition", partition) }
            writer.member("state", job.state)
            if let reason = job.reason { writer.member("reason", reason) }
            if let limit = job.timeLimit { writer.member("timeLimit", limit) }
            if let time = job.endsAt { writer.member("endsAt", InternetTime.format(time)) }
            if let seconds = job.extendedSeconds { writer.member("extendedSeconds", seconds) }
            if let time = job.expectedStart { writer.member("expectedStart", InternetTime.format(time)) }
            writer.close()
        }
        if session.displayServer != .xvnc { writer.member("displayServer", session.displayServer.rawValue) }
        writer.close()
        out = writer.out
    }

    static func read(_ scanner: inout JSONScanner) throws -> Session {
        var id: String?, user: String?, uid: UInt32?, gid: UInt32?, display: Int?, rfbPort: Int?, rfbSocket: String?
        var pid: Int32?, pidStartTicks: UInt64?, executable: String?, desktopPid: Int32?, state: SessionState?, startedAt: Date?
        var desktop: String?, geometry: Geometry?, depth: Int?, clients: Int?, lastClientAt: Date?, idleSeconds: Int?
        var password: String?, viewOnlyPassword: String?, slurm: SlurmJob?, displayServer = DisplayServerKind.xvnc
        var seen: UInt64 = 0
        try scanner.object { scanner, key, _ in
            guard let (field, bit) = Self.sessionFields[key] else { return try scanner.skipValue() }
            // Foundation's decoder takes one of a repeated key; which, it does not promise.
            guard seen & bit == 0 else { throw scanner.malformed("\"\(key)\" twice in a session") }
            seen |= bit
            switch field {
            case .id: id = try scanner.string()
            case .user: user = try scanner.string()
            case .uid: uid = try scanner.integer(UInt32.self)
            case .gid: gid = try scanner.integer(UInt32.self)
            case .display: display = try scanner.integer(Int.self)
            case .rfbPort: rfbPort = try scanner.nullOr { try $0.integer(Int.self) }
            case .rfbSocket: rfbSocket = try scanner.nullOr { try $0.string() }
            case .pid: pid = try scanner.integer(Int32.self)
            case .pidStartTicks: pidStartTicks = try scanner.integer(UInt64.self)
            case .executable: executable = try scanner.string()
            case .desktopPid: desktopPid = try scanner.nullOr { try $0.integer(Int32.self) }
            case .state:
                let name = try scanner.string()
                guard let known = SessionState(rawValue: name) else { throw scanner.malformed("'\(name)' is not a session state") }
                state = known
            case .startedAt: startedAt = try time(&scanner)
            case .desktop: desktop = try scanner.string()
            case .geometry:
                let text = try scanner.string()
                guard let parsed = try? Geometry(parsing: text) else { throw scanner.malformed("'\(text)' is not a geometry") }
                geometry = parsed
            case .depth: depth = try scanner.integer(Int.self)
            case .clients: clients = try scanner.integer(Int.self)
            case .lastClientAt: lastClientAt = try scanner.nullOr { try time(&$0) }
            case .idleSeconds: idleSeconds = try scanner.integer(Int.self)
            case .password: password = try scanner.nullOr { try $0.string() }
            case .viewOnlyPassword: viewOnlyPassword = try scanner.nullOr { try $0.string() }
            case .slurm: slurm = try scanner.nullOr { try job(&$0) }
            case .displayServer:
                guard let kind = try scanner.nullOr({ try $0.string() }) else { break }
                guard let known = DisplayServerKind(rawValue: kind) else { throw scanner.malformed("'\(kind)' is not a display server") }
                displayServer = known
            }
        }
        guard let id, let user, let uid, let gid, let display, let pid, let pidStartTicks, let executable, let state, let startedAt,
              let desktop, let geometry, let depth, let clients, let idleSeconds else {
            throw scanner.malformed("a session without one of the fields every session has")
        }
        var session = Session(id: id, user: user, uid: uid, gid: gid, display: Display(display), endpoint: .tcp(port: 0), pid: pid,
                              pidStartTicks: pidStartTicks, executable: executable, desktopPid: desktopPid, state: state,
                              startedAt: startedAt, desktop: desktop, geometry: geometry, depth: depth, clients: clients,
                              lastClientAt: lastClientAt, idleSeconds: idleSeconds, password: password)
        session.rfbPort = rfbPort
        session.rfbSocket = rfbSocket
        session.viewOnlyPassword = viewOnlyPassword
        session.slurm = slurm
        session.displayServer = displayServer
        return session
    }

    /// Each key of a session to its field and that field's bit among the keys seen: one hash a
    /// key, where a walk of the twenty-three names (for the repeat check, then again for the
    /// switch) was most of reading a `list --all` of two hundred.
    static let sessionFields: [String: (field: Session.CodingKeys, bit: UInt64)] = Dictionary(
        uniqueKeysWithValues: Session.CodingKeys.allCases.enumerated().map { index, field in (field.rawValue, (field, UInt64(1) << index)) })
    static let jobKeys = ["jobId", "node", "partition", "state", "reason", "timeLimit", "endsAt", "extendedSeconds", "expectedStart"]

    /// Which of an object's known keys came already (a bit each); an unknown key repeated is
    /// Foundation's to pass over as it likes, and so it is here too.
    struct KeysSeen {
        private var bits: UInt64 = 0

        mutating func first(_ key: String, among known: [String]) -> Bool {
            guard let index = known.firstIndex(of: key) else { return true }
            defer { bits |= 1 << index }
            return bits & (1 << index) == 0
        }
    }

    private static func time(_ scanner: inout JSONScanner) throws -> Date {
        let text = try scanner.string()
        guard let date = InternetTime.parse(text) else { throw scanner.malformed("'\(text)' is not an ISO 8601 time") }
        return date
    }

    private static func job(_ scanner: inout JSONScanner) throws -> SlurmJob {
        var jobId: String?, node: String?, partition: String?, state: String?, reason: String?, timeLimit: String?
        var endsAt: Date?, extendedSeconds: Int?, expectedStart: Date?
        var seen = KeysSeen()
        try scanner.object { scanner, key, _ in
            guard seen.first(key, among: Self.jobKeys) else { throw scanner.malformed("\"\(key)\" twice in a job") }
            switch key {
            case "jobId": jobId = try scanner.string()
            case "node": node = try scanner.nullOr { try $0.string() }
            case "partition": partition = try scanner.nullOr { try $0.string() }
            case "state": state = try scanner.string()
            case "reason": reason = try scanner.nullOr { try $0.string() }
            case "timeLimit": timeLimit = try scanner.nullOr { try $0.string() }
            case "endsAt": endsAt = try scanner.nullOr { try time(&$0) }
            case "extendedSeconds": extendedSeconds = try scanner.nullOr { try $0.integer(Int.self) }
            case "expectedStart": expectedStart = try scanner.nullOr { try time(&$0) }
            default: try scanner.skipValue()
            }
        }
        guard let jobId, let state else { throw scanner.malformed("a job without its id or state") }
        var job = SlurmJob(jobId: jobId, node: node, partition: partition, state: state, reason: reason, timeLimit: timeLimit,
                           endsAt: endsAt, expectedStart: expectedStart)
        job.extendedSeconds = extendedSeconds
        return job
    }
}

/// JSON written by hand: an object's members, strings escaped as RFC 8259 asks.
private struct JSONWriting {
    var out: [UInt8]
    private var first = true

    init(out: [UInt8]) {
        self.out = out
    }

    mutating func open() {
        out.append(UInt8(ascii: "{"))
        first = true
    }

    mutating func close() {
        out.append(UInt8(ascii: "}"))
        first = false
    }

    mutating func key(_ name: StaticString) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(contentsOf: "\":".utf8)
    }

    mutating func member(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    mutating func member(_ name: StaticString, _ value: some BinaryInteger) {
        key(name)
        integer(value)
    }

    /// Its decimal digits, written straight into the output (no String made for each).
    private mutating func integer(_ value: some BinaryInteger) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // room for 20 digits, the most a 64-bit number has
        withUnsafeMutableBytes(of: &digits) { buffer in
            var at = buffer.count
            repeat {
                at -= 1
                buffer[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[at...])
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    mutating func string(_ value: String) {
        out.append(UInt8(ascii: "\""))
        // Most strings (names, paths, ids) need no escape: copied whole.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out.append(contentsOf: value.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case ..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(Self.hex[Int(byte >> 4)])
                out.append(Self.hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
