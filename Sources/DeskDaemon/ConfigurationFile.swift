import DeskCore
import FoundationEssentials
import TOMLKit

/// A mistake in the configuration file, with the line it is on.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let path: String
    public let line: Int?
    public let message: String

    public var description: String {
        "\(path)\(line.map { ":\($0)" } ?? ""): \(message)"
    }
}

/// /etc/deskd/deskd.toml: read by TOMLKit, checked key by key against the schema below.
/// Unknown sections and keys are errors, not silently ignored: a misspelt limit must not
/// leave a host without the limit its admin thinks it has.
public enum ConfigurationFile {
    public static let defaultPath = "/etc/deskd/deskd.toml"

    /// Reads `path` over the built-in defaults. A missing file at the default path is fine
    /// (defaults apply); a missing file the admin named is an error.
    public static func load(_ path: String, required: Bool) throws(ConfigurationError) -> DaemonConfiguration {
        guard FileManager.default.fileExists(atPath: path) else {
            if required { throw ConfigurationError(path: path, line: nil, message: "no such file; pass an existing file to --config.") }
            return DaemonConfiguration()
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError(path: path, line: nil, message: "cannot be read as UTF-8 text; check its permissions and encoding.")
        }
        var configuration = try parse(text, path: path)
        configuration.configurationFile = path
        return configuration
    }

    public static func parse(_ text: String, path: String) throws(ConfigurationError) -> DaemonConfiguration {
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch let error as TOMLParseError {
            throw ConfigurationError(path: path, line: error.source.begin.line, message: "not valid TOML: \(error.description).")
        } catch {
            throw ConfigurationError(path: path, line: nil, message: "not valid TOML.")
        }
        let lines = SourceLines(text)
        var configuration = DaemonConfiguration()
        for section in table.keys.sorted() {
            guard let keys = schema[section] else {
                throw ConfigurationError(path: path, line: lines.section(section), message: "unknown section [\(section)]; known sections are \(schema.keys.sorted().map { "[\($0)]" }.joined(separator: ", ")).")
            }
            guard let values = table[section]?.table else {
                throw ConfigurationError(path: path, line: lines.key(section, in: nil), message: "\(section) must be a section ([\(section)]), not a value.")
            }
            for key in values.keys.sorted() {
                guard let apply = keys[key] else {
                    throw ConfigurationError(path: path, line: lines.key(key, in: section), message: "unknown key \(section).\(key); known keys in [\(section)] are \(keys.keys.sorted().joined(separator: ", ")).")
                }
                do { try apply(&configuration, values[key]!) } catch {
                    throw ConfigurationError(path: path, line: lines.key(key, in: section), message: "\(section).\(key) \(error.reason).")
                }
            }
        }
        if let problem = crossCheck(configuration) {
            throw ConfigurationError(path: path, line: lines.key(problem.key, in: problem.section), message: problem.message)
        }
        return configuration
    }

    /// Rules that span keys.
    static func crossCheck(_ c: DaemonConfiguration) -> (section: String, key: String, message: String)? {
        let exposure = c.vncExposure
        if exposure.securityTypes.contains("X509Vnc") && (exposure.tlsCertificate == nil || exposure.tlsKey == nil) {
            return ("network", "security_types", "network.security_types has X509Vnc, which needs network.tls_certificate and network.tls_key; set both or drop X509Vnc.")
        }
        if exposure.tlsCertificate != nil && !exposure.usesTCP {
            return ("network", "tls_certificate", "network.tls_certificate is set but network.listen is \"unix\", where viewers come through ssh and TLS adds nothing; set listen to an address or drop the certificate.")
        }
        if (exposure.tlsCertificate == nil) != (exposure.tlsKey == nil) {
            return ("network", exposure.tlsCertificate == nil ? "tls_key" : "tls_certificate", "network.tls_certificate and network.tls_key go together; set both or neither.")
        }
        if !exposure.isLoopbackOnly && exposure.securityTypes == ["VncAuth"] && exposure.tlsCertificate != nil {
            return ("network", "security_types", "network.tls_certificate is set but security_types is only VncAuth, so viewers off this host would not use TLS; add X509Vnc.")
        }
        let (lo, hi) = (c.limits.minimumGeometry, c.limits.maximumGeometry)
        if lo.width > hi.width || lo.height > hi.height {
            return ("limits", "min_geometry", "limits.min_geometry \(lo) is larger than limits.max_geometry \(hi).")
        }
        return nil
    }

    // MARK: Schema

    struct Reason: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    typealias Apply = @Sendable (inout DaemonConfiguration, any TOMLValueConvertible) throws(Reason) -> Void

    /// Every key deskd knows, by section. Templates/deskd.toml documents each one.
    static let schema: [String: [String: Apply]] = [
        "daemon": [
            "socket": { c, v throws(Reason) in c.socketPath = try absolutePath(v) },
            "runtime_directory": { c, v throws(Reason) in c.runtimeDirectory = try absolutePath(v) },
            "state_directory": { c, v throws(Reason) in c.stateDirectory = try absolutePath(v) },
            "admin_group": { c, v throws(Reason) in c.adminGroup = try name(v) },
            "log_level": { c, v throws(Reason) in
                c.logLevel = try oneOf(v, ["trace", "debug", "info", "notice", "warning", "error", "critical"])
            },
            "max_connections": { c, v throws(Reason) in c.maxConnections = try positive(v, max: 65536) },
            "max_connections_per_user": { c, v throws(Reason) in c.maxConnectionsPerUser = try positive(v, max: 65536) },
        ],
        "sessions": [
            "xvnc": { c, v throws(Reason) in c.xvncPath = try absolutePath(v) },
            "templates": { c, v throws(Reason) in c.templateDirectories = try strings(v).map(checkedAbsolute) + DaemonConfiguration().templateDirectories },
            "default_desktop": { c, v throws(Reason) in c.defaultDesktop = try desk(v) { text throws(DeskError) in try XstartupTemplate.validate(desktopName: text) } },
            "default_geometry": { c, v throws(Reason) in c.defaultGeometry = try desk(v) { text throws(DeskError) in try Geometry(parsing: text) } },
            "default_depth": { c, v throws(Reason) in
                guard let depth = v.int, ColorDepth.allowed.contains(depth) else { throw Reason("must be 16, 24 or 32, not \(v)") }
                c.defaultDepth = depth
            },
            "start_timeout": { c, v throws(Reason) in c.startTimeout = .seconds(try duration(v)) },
            "kill_grace": { c, v throws(Reason) in c.killGrace = .seconds(try duration(v)) },
            "user_xstartup": { c, v throws(Reason) in c.honourUserXstartup = try bool(v) },
            "desktop_exit_ends_session": { c, v throws(Reason) in c.desktopExitEndsSession = try bool(v) },
            "idle_limit": { c, v throws(Reason) in c.idleLimitSeconds = try duration(v) },
            "xvnc_max_idle": { c, v throws(Reason) in c.xvncMaxIdleSeconds = try duration(v) },
            "xvnc_max_disconnection": { c, v throws(Reason) in c.xvncMaxDisconnectionSeconds = try duration(v) },
            "path": { c, v throws(Reason) in c.sessionPath = try string(v) },
            "log_bytes": { c, v throws(Reason) in c.sessionLogBytes = try positive(v, max: 1 << 30) },
            "keep_logs": { c, v throws(Reason) in c.keptSessionLogs = try nonNegative(v, max: 100_000) },
        ],
        "limits": [
            "minimum_uid": { c, v throws(Reason) in c.minimumUID = UInt32(try positive(v, max: Int(Int32.max))) },
            "max_sessions_per_user": { c, v throws(Reason) in c.limits.maxSessionsPerUser = try positive(v, max: 99) },
            "max_sessions": { c, v throws(Reason) in c.limits.maxSessions = try positive(v, max: 99) },
            "allowed_users": { c, v throws(Reason) in c.limits.allowedUsers = try strings(v).map(checkedName) },
            "allowed_groups": { c, v throws(Reason) in c.limits.allowedGroups = try strings(v).map(checkedName) },
            "allowed_desktops": { c, v throws(Reason) in
                c.limits.allowedDesktops = try strings(v).map { text throws(Reason) in try desk(text) { text throws(DeskError) in try XstartupTemplate.validate(desktopName: text) } }
            },
            "displays": { c, v throws(Reason) in c.displayRange = try displayRange(v) },
            "min_geometry": { c, v throws(Reason) in c.limits.minimumGeometry = try desk(v) { text throws(DeskError) in try Geometry(parsing: text) } },
            "max_geometry": { c, v throws(Reason) in c.limits.maximumGeometry = try desk(v) { text throws(DeskError) in try Geometry(parsing: text) } },
            "session_tasks": { c, v throws(Reason) in c.sessionTasksMax = try positive(v, max: 4_194_304) },
            "session_memory": { c, v throws(Reason) in c.sessionMemoryMax = try byteSize(v) },
            "starts_per_minute": { c, v throws(Reason) in
                let n = try nonNegative(v, max: 6000)
                c.startsPerMinute = n == 0 ? nil : n
            },
        ],
        "network": [
            "listen": { c, v throws(Reason) in
                let text = try string(v)
                switch text {
                case "unix": c.vncExposure.listen = .unixSocket
                case "loopback", "localhost", "127.0.0.1": c.vncExposure.listen = .loopback
                case _ where isIPv4(text): c.vncExposure.listen = .address(text)
                default: throw Reason("must be \"unix\", \"loopback\" or an IPv4 address such as \"0.0.0.0\", not \"\(text)\"")
                }
            },
            "security_types": { c, v throws(Reason) in
                let types = try strings(v)
                if types.contains(where: { $0.lowercased() == "none" }) {
                    throw Reason("may not contain None: on a shared host every local user reaches loopback, so a desktop without authentication is everyone's; use VncAuth, TLSVnc or X509Vnc")
                }
                guard !types.isEmpty, types.allSatisfy(VNCExposure.knownSecurityTypes.contains) else {
                    throw Reason("must list one or more of \(VNCExposure.knownSecurityTypes.joined(separator: ", "))")
                }
                c.vncExposure.securityTypes = types
            },
            "tls_certificate": { c, v throws(Reason) in c.vncExposure.tlsCertificate = try absolutePath(v) },
            "tls_key": { c, v throws(Reason) in c.vncExposure.tlsKey = try absolutePath(v) },
        ],
    ]

    // MARK: Value readers, each failing with the end of a sentence.

    static func string(_ v: any TOMLValueConvertible) throws(Reason) -> String {
        guard let text = v.string else { throw Reason("must be a string in quotes, not \(v.debugDescription)") }
        return text
    }

    static func strings(_ v: any TOMLValueConvertible) throws(Reason) -> [String] {
        guard let array = v.array else { throw Reason("must be a list of strings, like [\"a\", \"b\"]") }
        var result: [String] = []
        for element in array {
            guard let text = element.string else { throw Reason("must be a list of strings, like [\"a\", \"b\"]") }
            result.append(text)
        }
        return result
    }

    /// A size in bytes: a whole number, or one with K, M, G or T (powers of 1024), as "4G".
    static func byteSize(_ v: any TOMLValueConvertible) throws(Reason) -> Int {
        let problem = Reason("must be a size such as \"512M\" or \"4G\" (K, M, G, T) or a number of bytes, at least 64M, not \(v.debugDescription)")
        var size: Int
        if let n = v.int {
            size = n
        } else if let text = v.string, let unit = text.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][unit.uppercased()],
                  let n = Int(text.dropLast()), n > 0 {
            size = n << (10 * power)
        } else {
            throw problem
        }
        guard size >= 64 << 20 else { throw problem }
        return size
    }

    static func bool(_ v: any TOMLValueConvertible) throws(Reason) -> Bool {
        guard let value = v.bool else { throw Reason("must be true or false, not \(v.debugDescription)") }
        return value
    }

    static func positive(_ v: any TOMLValueConvertible, max: Int) throws(Reason) -> Int {
        guard let n = v.int, n >= 1, n <= max else { throw Reason("must be a whole number from 1 to \(max), not \(v.debugDescription)") }
        return n
    }

    static func nonNegative(_ v: any TOMLValueConvertible, max: Int) throws(Reason) -> Int {
        guard let n = v.int, n >= 0, n <= max else { throw Reason("must be a whole number from 0 to \(max), not \(v.debugDescription)") }
        return n
    }

    static func absolutePath(_ v: any TOMLValueConvertible) throws(Reason) -> String {
        try checkedAbsolute(try string(v))
    }

    static func checkedAbsolute(_ text: String) throws(Reason) -> String {
        guard text.hasPrefix("/"), !text.contains("\0"), !text.split(separator: "/").contains("..") else {
            throw Reason("must be an absolute path without '..', not \"\(text)\"")
        }
        return text
    }

    static func name(_ v: any TOMLValueConvertible) throws(Reason) -> String {
        try checkedName(try string(v))
    }

    static func checkedName(_ text: String) throws(Reason) -> String {
        guard !text.isEmpty, text.count <= 32, !text.hasPrefix("-"),
              text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) })
        else { throw Reason("must hold user or group names (letters, digits, '.', '_', '-'), not \"\(text)\"") }
        return text
    }

    static func oneOf(_ v: any TOMLValueConvertible, _ choices: [String]) throws(Reason) -> String {
        let text = try string(v)
        guard choices.contains(text) else { throw Reason("must be one of \(choices.joined(separator: ", ")), not \"\(text)\"") }
        return text
    }

    static func duration(_ v: any TOMLValueConvertible) throws(Reason) -> Int {
        if let n = v.int, n > 0 { return n }
        return try desk(v) { text throws(DeskError) in try IdleDuration.seconds(parsing: text) }
    }

    /// A string checked by one of the core's parsers, whose sentence becomes the reason.
    static func desk<T>(_ v: any TOMLValueConvertible, _ parse: (String) throws(DeskError) -> T) throws(Reason) -> T {
        try desk(try string(v), parse)
    }

    static func desk<T>(_ text: String, _ parse: (String) throws(DeskError) -> T) throws(Reason) -> T {
        do { return try parse(text) } catch {
            throw Reason("is wrong: \(error.message.trimming(where: { $0 == "." }))")
        }
    }

    static func displayRange(_ v: any TOMLValueConvertible) throws(Reason) -> ClosedRange<Int> {
        let text = try string(v)
        let parts = text.split(separator: "-").map { $0.trimming() }
        guard parts.count == 2, let lo = Int(parts[0]), let hi = Int(parts[1]), lo >= 1, hi <= 99, lo <= hi else {
            throw Reason("must be a range such as \"1-99\" within 1-99, not \"\(text)\"")
        }
        return lo...hi
    }

    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && Int(part).map { (0...255).contains($0) } == true
        }
    }
}

/// Finds the line a section or key is on, for error messages. TOMLKit reports lines for
/// syntax errors only; for schema errors this scan of `[section]` headers and `key =` lines
/// is enough, because the file has already parsed as TOML.
struct SourceLines {
    private let lines: [Substring]

    init(_ text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    }

    func section(_ name: String) -> Int? {
        lines.firstIndex { Self.header(of: $0) == name }.map { $0 + 1 }
    }

    func key(_ key: String, in section: String?) -> Int? {
        var current: String?
        for (index, line) in lines.enumerated() {
            if let header = Self.header(of: line) { current = header; continue }
            guard current == section else { continue }
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            for spelling in [key, "\"\(key)\""] where trimmed.hasPrefix(spelling) {
                if trimmed.dropFirst(spelling.count).drop(while: { $0 == " " || $0 == "\t" }).first == "=" { return index + 1 }
            }
        }
        return nil
    }

    private static func header(of line: Substring) -> String? {
        let trimmed = line.trimming()
        guard trimmed.hasPrefix("["), !trimmed.hasPrefix("[["), let close = trimmed.firstIndex(of: "]") else { return nil }
        return trimmed[trimmed.index(after: trimmed.startIndex)..<close].trimming()
    }
}
