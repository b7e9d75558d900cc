@testable import DeskDaemon
import DeskCore
import Foundation
import Testing

@Suite("The configuration file")
struct ConfigurationFileTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func parseError(_ text: String) -> ConfigurationError? {
        do { _ = try ConfigurationFile.parse(text, path: "deskd.toml"); return nil } catch { return error }
    }

    @Test("an empty file gives the built-in defaults")
    func emptyFile() throws {
        let configuration = try ConfigurationFile.parse("", path: "deskd.toml")
        #expect(configuration.runtimeDirectory == "/run/deskd")
        #expect(configuration.limits == SessionLimits())
        // A desktop's output stays out of the journal, which group adm reads (issue 26, item 7).
        #expect(!configuration.journalOutput)
        // By default no TCP port at all: a Unix socket of the owner's, mode 0600.
        #expect(configuration.vncExposure.listen == .unixSocket)
        #expect(!configuration.vncExposure.usesTCP)
        #expect(configuration.vncExposure.securityTypes == ["VncAuth"])
        #expect(configuration.displayServerPolicy == DisplayServerPolicy())
        let loopback = try ConfigurationFile.parse("[network]\nlisten = \"loopback\"\n", path: "deskd.toml")
        #expect(loopback.vncExposure.listen == .loopback)
    }

    @Test("the shipped example documents every key and parses")
    func shippedExample() throws {
        let path = Self.repository.appendingPathComponent("Templates/deskd.toml").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        _ = try ConfigurationFile.parse(text, path: path)
        // Every key is in the example, commented out, so an admin finds it there.
        for (section, keys) in ConfigurationFile.schema {
            #expect(text.contains("[\(section)]"), "example lacks [\(section)]")
            for key in keys.keys {
                #expect(text.contains("# \(key) = ") || text.contains("\n\(key) = "), "example lacks \(section).\(key)")
            }
        }
    }

    @Test("values land where they belong")
    func values() throws {
        let configuration = try ConfigurationFile.parse("""
            [limits]
            max_sessions_per_user = 2
            max_sessions = 30
            allowed_groups = ["vnc-users"]
            displays = "10-40"
            max_geometry = "2560x1440"
            starts_per_minute = 0
            session_tasks = 2000
            session_memory = "4G"

            [sessions]
            idle_limit = "2h"
            kill_grace = 1
            keep_logs = 0
            log_bytes = 65536
            journal_output = true

            [network]
            listen = "0.0.0.0"
            security_types = ["X509Vnc"]
            tls_certificate = "/etc/deskd/tls/cert.pem"
            tls_key = "/etc/deskd/tls/key.pem"
            """, path: "deskd.toml")
        #expect(configuration.limits.maxSessionsPerUser == 2)
        #expect(configuration.limits.maxSessions == 30)
        #expect(configuration.limits.allowedGroups == ["vnc-users"])
        #expect(configuration.displayRange == 10...40)
        #expect(configuration.limits.maximumGeometry == Geometry(width: 2560, height: 1440))
        #expect(configuration.startsPerMinute == nil)
        #expect(configuration.sessionTasksMax == 2000 && configuration.sessionMemoryMax == 4 << 30)
        #expect(configuration.keptSessionLogs == 0 && configuration.sessionLogBytes == 65536)
        #expect(configuration.journalOutput)
        #expect(configuration.idleLimitSeconds == 7200)
        #expect(configuration.killGrace == .seconds(1))
        #expect(configuration.vncExposure.tlsCertificate == "/etc/deskd/tls/cert.pem")
        #expect(configuration.vncExposure.listen == .address("0.0.0.0") && configuration.vncExposure.securityTypes == ["X509Vnc"])
    }

    @Test("displays reach :2000 on Unix sockets, and on TCP with a port base clear of X's ports")
    func displaysPast99() throws {
        #expect(try ConfigurationFile.parse("[limits]\ndisplays = \"100-2000\"\n", path: "deskd.toml").displayRange == 100...2000)
        let tcp = try ConfigurationFile.parse("[network]\nlisten = \"loopback\"\nport_base = 10000\n[limits]\ndisplays = \"1-2000\"\n", path: "deskd.toml")
        #expect(tcp.vncExposure.rfbPortBase == 10000 && tcp.displayRange == 1...2000)
        #expect(try ConfigurationFile.parse("", path: "deskd.toml").vncExposure.rfbPortBase == nil, "no TCP, no ports to look at")
    }

    @Test("metrics.listen takes an address and a port, localhost meaning 127.0.0.1, or off")
    func metricsListen() throws {
        #expect(try ConfigurationFile.parse("", path: "deskd.toml").metricsListen == nil)
        #expect(try ConfigurationFile.parse("[metrics]\nlisten = \"localhost:9466\"\n", path: "deskd.toml").metricsListen
            == ListenAddress(host: "127.0.0.1", port: 9466))
        #expect(try ConfigurationFile.parse("[metrics]\nlisten = \"off\"\n", path: "deskd.toml").metricsListen == nil)
        let web = try ConfigurationFile.parse("[web]\nlisten = \"127.0.0.1:8443\"\nmax_connections_per_address = 100\n", path: "deskd.toml").web
        #expect(web.gatewayConfiguration?.limits.maxConnectionsPerAddress == 100)
    }

    @Test("web.tls_minimum reaches the gateway, 1.2 unless set")
    func tlsMinimum() throws {
        let tls = "[web]\nlisten = \"0.0.0.0:443\"\ntls_certificate = \"/c.pem\"\ntls_key = \"/k.pem\"\n"
        #expect(try ConfigurationFile.parse(tls, path: "deskd.toml").web.gatewayConfiguration?.tlsMinimum == .tls12)
        #expect(try ConfigurationFile.parse(tls + "tls_minimum = \"1.3\"\n", path: "deskd.toml").web.gatewayConfiguration?.tlsMinimum == .tls13)
    }

    @Test("an unknown key is refused with its line and the keys that exist")
    func unknownKey() throws {
        let error = try #require(parseError("[limits]\nmax_sessions = 3\nmax_session_per_user = 2\n"))
        #expect(error.line == 3)
        #expect(error.description.hasPrefix("deskd.toml:3: unknown key limits.max_session_per_user"))
        #expect(error.description.contains("max_sessions_per_user"))
    }

    @Test("an unknown section is refused with its line")
    func unknownSection() throws {
        let error = try #require(parseError("[daemon]\nadmin_group = \"wheel\"\n\n[limit]\nmax_sessions = 3\n"))
        #expect(error.line == 4)
        #expect(error.message.contains("unknown section [limit]"))
    }

    @Test("bad values are refused with their line and the reason", arguments: [
        ("[limits]\nmax_sessions_per_user = \"two\"\n", 2, "limits.max_sessions_per_user must be a whole number"),
        ("[limits]\nmax_sessions_per_user = 0\n", 2, "limits.max_sessions_per_user must be a whole number of sessions, 1 or more, not 0"),
        ("[limits]\nmax_sessions = 100\n", 2, "limits.max_sessions 100 is more than the 99 displays in limits.displays (\"1-99\"), and each session needs a display of its own; lower max_sessions to 99 or less, or widen limits.displays (up to \"1-2000\")."),
        ("[limits]\nmax_sessions_per_user = 3\ndisplays = \"5-6\"\n", 2, "limits.max_sessions_per_user 3 is more than the 2 displays in limits.displays (\"5-6\")"),
        ("[daemon]\nsocket = 5\n", 2, "daemon.socket must be a string in quotes, not 5"),
        ("[sessions]\nuser_xstartup = \"yes\"\n", 2, "sessions.user_xstartup must be true or false, not \"yes\""),
        ("limits = 3\n", 1, "limits must be a section ([limits]), not a value"),
        ("[limits]\nmax_sessions.x = 3\n", 2, "limits.max_sessions must be a whole number of sessions, 1 or more, not { x = 3 }"),
        ("[sessions]\nkill_grace = 2\n\n[limits]\nmax_sessions = \"4\n", 5, "deskd.toml:5: not valid TOML: a string is not closed before the end of the line"),
        ("[sessions]\n\ndefault_geometry = \"huge\"\n", 3, "sessions.default_geometry is wrong: 'huge' is not a geometry"),
        ("[sessions]\nidle_limit = \"2 hours\"\n", 2, "sessions.idle_limit is wrong"),
        ("[sessions]\ndefault_depth = 8\n", 2, "must be 16, 24 or 32"),
        ("[limits]\ndisplays = \"0-200\"\n", 2, "limits.displays must be a range"),
        ("[daemon]\nsocket = \"relative.sock\"\n", 2, "must be an absolute path"),
        ("[daemon]\nlog_level = \"loud\"\n", 2, "must be one of trace"),
        ("[network]\nlisten = \"everywhere\"\n", 2, "network.listen must be \"unix\", \"loopback\" or an IPv4 address"),
        ("[network]\nsecurity_types = [\"VncAuth\", \"None\"]\n", 2, "may not contain None"),
        ("[network]\nsecurity_types = [\"Plain\"]\n", 2, "must list one or more of VncAuth, TLSVnc, X509Vnc"),
        ("[network]\nsecurity_types = [\"X509Vnc\"]\n", 2, "X509Vnc, which needs network.tls_certificate"),
        ("[limits]\nmin_geometry = \"1920x1080\"\nmax_geometry = \"1280x720\"\n", 2, "larger than limits.max_geometry"),
        ("[limits]\nallowed_users = [\"alice\", \"-rf\"]\n", 2, "must hold user or group names"),
        ("[limits]\nmax_sessions = 3\nmax_sessions = 4\n", 3, "not valid TOML"),
        ("[limits\nmax_sessions = 3\n", 1, "not valid TOML"),
        ("[limits]\nsession_memory = \"4 GB\"\n", 2, "limits.session_memory must be a size such as \"512M\""),
        ("[limits]\nsession_memory = \"1M\"\n", 2, "at least 64M"),
        ("[limits]\ndisplays = \"1-2001\"\n", 2, "within 1-2000"),
        ("[network]\nlisten = \"loopback\"\n[limits]\ndisplays = \"1-150\"\n", 4, "into 6000-6063, X's own; keep limits.displays within 1-99 or set network.port_base"),
        ("[network]\nlisten = \"loopback\"\nport_base = 64000\n[limits]\ndisplays = \"1-2000\"\n", 3, "past 65535"),
        ("[network]\nport_base = 80\n", 2, "from 1024 to 65534"),
        ("[metrics]\nlisten = \"9466\"\n", 2, "metrics.listen must be \"off\" or an IPv4 address and a port such as \"127.0.0.1:9466\""),
        ("[metrics]\nlisten = \"127.0.0.1:0\"\n", 2, "metrics.listen must be"),
        ("[web]\ntls_minimum = \"1.1\"\n", 2, "web.tls_minimum must be one of 1.2, 1.3, not \"1.1\""),
        ("[web]\ntls_minimum = 1.2\n", 2, "web.tls_minimum"),
    ])
    func badValue(text: String, line: Int, words: String) throws {
        let error = try #require(parseError(text))
        #expect(error.line == line, "\(error)")
        #expect(error.description.contains(words), "\(error)")
    }

    @Test("sessions past 99: up to the number of displays, :1 to :2000 on Unix sockets")
    func sessionsPast99() throws {
        let configuration = try ConfigurationFile.parse("""
            [limits]
            displays = "1-2000"
            max_sessions = 400
            max_sessions_per_user = 400
            """, path: "deskd.toml")
        #expect(configuration.limits.maxSessions == 400 && configuration.limits.maxSessionsPerUser == 400)
        #expect(configuration.displayRange == 1...2000)
        // Order does not matter: the range may come after the counts it bounds.
        let full = try ConfigurationFile.parse("[limits]\nmax_sessions = 2000\ndisplays = \"1-2000\"\n", path: "deskd.toml")
        #expect(full.limits.maxSessions == 2000)

        let error = try #require(parseError("[limits]\ndisplays = \"1-2000\"\nmax_sessions = 2001\n"))
        #expect(error.line == 3)
        #expect(error.description == "deskd.toml:3: limits.max_sessions 2001 is more than the 2000 displays in limits.displays (\"1-2000\"), and each session needs a display of its own; lower max_sessions to 2000 or less.")
        let perUser = try #require(parseError("[limits]\ndisplays = \"1-2000\"\nmax_sessions_per_user = 2001\n"))
        #expect(perUser.line == 3 && perUser.message.hasPrefix("limits.max_sessions_per_user 2001 is more than the 2000 displays"))
    }

    @Test("a per-user cap above the host's is allowed, and the default per-user cap fits any range")
    func perUserAboveHost() throws {
        let configuration = try ConfigurationFile.parse("[limits]\nmax_sessions = 10\nmax_sessions_per_user = 20\n", path: "deskd.toml")
        #expect(configuration.limits.maxSessions == 10 && configuration.limits.maxSessionsPerUser == 20)
        // Two displays and the default of 4 per user: not the admin's doing, so not an error.
        #expect(try ConfigurationFile.parse("[limits]\ndisplays = \"1-2\"\n", path: "deskd.toml").limits.maxSessionsPerUser == 4)
    }

    @Test("TOML errors keep the form path:line: not valid TOML: reason.")
    func syntaxErrors() throws {
        let error = try #require(parseError("[limits\nmax_sessions = 3\n"))
        #expect(error.description == "deskd.toml:1: not valid TOML: expected ']' to close the header, found the end of the line.")
        let twice = try #require(parseError("[limits]\nmax_sessions = 3\nmax_sessions = 4\n"))
        #expect(twice.description == "deskd.toml:3: not valid TOML: key \"max_sessions\" is defined twice.")
    }

    @Test("an error's cause is its place: file, line and, for TOML's own, column")
    func errorCause() throws {
        let syntax = try #require(parseError("[limits]\nmax_sessions = \"4\n"))
        #expect(syntax.line == 2 && syntax.column == 16)
        #expect(syntax.cause == .configuration(file: "deskd.toml", line: 2, column: 16))
        #expect("\(syntax.cause)" == "deskd.toml:2:16")
        // The schema knows the key's line, not a column.
        let key = try #require(parseError("[limits]\nmax_sessions = 3\nmax_session_per_user = 2\n"))
        #expect(key.cause == .configuration(file: "deskd.toml", line: 3, column: nil))
        // The sentence is as it was: path:line, no column.
        #expect(syntax.description.hasPrefix("deskd.toml:2: not valid TOML: a string is not closed"))
    }

    @Test("a missing file is fine at the default path and an error when named")
    func missingFile() throws {
        let path = "/nonexistent/deskd.toml"
        #expect(try ConfigurationFile.load(path, required: false).runtimeDirectory == "/run/deskd")
        #expect(throws: ConfigurationError.self) { try ConfigurationFile.load(path, required: true) }
    }

    @Test func aDefaultTimeOverTheSitesMaxTimeIsRefused() {
        let error = parseError("[slurm]\nlisten = \"127.0.0.1:7010\"\nmax_time = \"2:00:00\"\n")
        #expect(error?.message.contains("slurm.time 4:00:00 is longer than slurm.max_time 2:00:00") == true, "\(String(describing: error))")
        #expect(parseError("[slurm]\nmax_time = \"8:00:00\"\nextend_max = \"0s\"\n") == nil)
    }
}
