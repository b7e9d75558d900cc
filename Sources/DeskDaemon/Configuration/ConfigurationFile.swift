import DeskCore
import FoundationEssentials

/// /etc/deskd/deskd.toml: read by DeskCore's TOML parser, checked key by key against the
/// key table (ConfigurationFile+Keys.swift).
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
        do { table = try TOML.parse(text) } catch {
            throw ConfigurationError(path: path, line: error.line, column: error.column, message: "not valid TOML: \(error.message).")
        }
        var configuration = DaemonConfiguration()
        // In the file's order, so that of several mistakes the first one is reported.
        for section in table.keys {
            guard let keys = schema[section] else {
                throw ConfigurationError(path: path, line: table.line(of: section), message: "unknown section [\(section)]; known sections are \(schema.keys.sorted().map { "[\($0)]" }.joined(separator: ", ")).")
            }
            guard let values = table[section]?.table else {
                throw ConfigurationError(path: path, line: table.line(of: section), message: "\(section) must be a section ([\(section)]), not a value.")
            }
            for key in values.keys {
                guard let apply = keys[key], let value = values[key] else {
                    throw ConfigurationError(path: path, line: values.line(of: key), message: "unknown key \(section).\(key); known keys in [\(section)] are \(keys.keys.sorted().joined(separator: ", ")).")
                }
                do { try apply(&configuration, value) } catch {
                    throw ConfigurationError(path: path, line: values.line(of: key), message: "\(section).\(key) \(error.reason).")
                }
            }
        }
        let given = { (section: String, key: String) in table[section]?.table?[key] != nil }
        if let problem = crossCheck(configuration, given: given) {
            throw ConfigurationError(path: path, line: table[problem.section]?.table?.line(of: problem.key), message: problem.message)
        }
        return configuration
    }

    /// Rules that span keys. `given` says whether the file set a key, for a rule that holds
    /// only for what the admin wrote.
    static func crossCheck(_ c: DaemonConfiguration, given: (_ section: String, _ key: String) -> Bool) -> (section: String, key: String, message: String)? {
        let exposure = c.vncExposure
        if let most = c.slurm.maxTimeSeconds, let time = SlurmTime(slurm: c.slurm.time)?.seconds, time > most {
            return ("slurm", given("slurm", "time") ? "time" : "max_time",
                    "slurm.time \(c.slurm.time) is longer than slurm.max_time \(SlurmTime(seconds: most)), so a start that names no time would be refused; make the default time shorter or max_time longer.")
        }
        if exposure.usesTCP {
            let ports = Display(c.displayRange.lowerBound).rfbPort(base: exposure.portBase)...Display(c.displayRange.upperBound).rfbPort(base: exposure.portBase)
            if ports.upperBound > 65535 {
                return ("network", "port_base", "network.port_base \(exposure.portBase) puts display :\(c.displayRange.upperBound) on port \(ports.upperBound), past 65535; lower the base or the top of limits.displays.")
            }
            if ports.overlaps(Display.x11PortsInUse) {
                return ("limits", "displays", "with TCP on, displays \(c.displayRange.lowerBound)-\(c.displayRange.upperBound) would listen on ports \(ports.lowerBound)-\(ports.upperBound), into 6000-6063, X's own; keep limits.displays within 1-99 or set network.port_base (for example 10000).")
            }
        }
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
        let web = c.web
        if (web.tlsCertificate == nil) != (web.tlsKey == nil) {
            return ("web", web.tlsCertificate == nil ? "tls_key" : "tls_certificate", "web.tls_certificate and web.tls_key go together; set both or neither.")
        }
        if web.isOn && !web.isLoopback && !web.usesTLS {
            return ("web", "listen", "web.listen \(web.host ?? ""):\(web.port) is not loopback, so the gateway needs web.tls_certificate and web.tls_key; plain HTTP is for 127.0.0.1 only, behind a proxy that does TLS.")
        }
        let (lo, hi) = (c.limits.minimumGeometry, c.limits.maximumGeometry)
        if lo.width > hi.width || lo.height > hi.height {
            return ("limits", "min_geometry", "limits.min_geometry \(lo) is larger than limits.max_geometry \(hi).")
        }
        // Each session holds a display, so a count past the range's size could never be reached:
        // a sign that the admin meant a wider range. The per-user default (4) is not held to it,
        // so that a range of one to three displays needs no other change.
        let displays = c.displayRange.count
        func beyondDisplays(_ key: String, _ count: Int) -> String {
            let range = c.displayRange, supported = Display.supportedRange
            let widen = range == supported ? "" : ", or widen limits.displays (up to \"\(supported.lowerBound)-\(supported.upperBound)\")"
            return "limits.\(key) \(count) is more than the \(displays) display\(displays == 1 ? "" : "s") in limits.displays (\"\(range.lowerBound)-\(range.upperBound)\"), and each session needs a display of its own; lower \(key) to \(displays) or less\(widen)."
        }
        if let most = c.limits.maxSessions, most > displays {
            return ("limits", "max_sessions", beyondDisplays("max_sessions", most))
        }
        if let most = c.limits.maxSessionsPerUser, most > displays, given("limits", "max_sessions_per_user") {
            return ("limits", "max_sessions_per_user", beyondDisplays("max_sessions_per_user", most))
        }
        return nil
    }
}
