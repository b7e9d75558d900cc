import DeskCore

/// The schema: every key of deskd.toml, with what it takes, its default, its manual text and
/// how it is checked and applied.
extension ConfigurationFile {
    typealias Apply = @Sendable (inout DaemonConfiguration, TOMLValue) throws(Reason) -> Void

    /// One key of the file: what it takes, its default, what it is for, and how it is checked
    /// and applied. The parser and deskd.toml(5) both read this table, so the manual lists
    /// exactly the keys the parser accepts.
    struct Key: Sendable {
        let section: String
        let name: String
        /// What the key takes, as the manual says it: "a whole number from 1 to 99".
        let takes: String
        /// The built-in default as TOML (a test parses it back to the built-in configuration);
        /// nil when the key is unset by default.
        let defaultValue: String?
        /// For the manual: what the key does, in a sentence or three.
        let summary: String
        let apply: Apply

        init(_ section: String, _ name: String, takes: String, default defaultValue: String?, _ summary: String, _ apply: @escaping Apply) {
            (self.section, self.name, self.takes, self.defaultValue, self.summary, self.apply) = (section, name, takes, defaultValue, summary, apply)
        }
    }

    /// The file's sections in the manual's order, each with what it holds.
    static let sections: [(name: String, summary: String)] = [
        ("daemon", "The daemon itself: its control socket, state directories, admin group, log level and connection caps."),
        ("sessions", "How desktops are started and ended: Xvnc, the templates, defaults for start, timeouts, idle policies and the logs kept."),
        ("limits", "Who may have a desktop and how much: accounts, counts, displays, desktops, screen sizes, start rate and cgroup caps."),
        ("network", "Where Xvnc listens for viewers and how they authenticate."),
        ("web", "deskd's browser gateway: noVNC's page and a WebSocket relay on one HTTPS port, reached through one-time links from deskctl url. Off unless listen is set."),
        ("slurm", "Desktops on a cluster's compute nodes, as Slurm jobs submitted as their user (deskctl start --slurm) and reached through this host's gateway. Off unless listen is set."),
        ("files", "The portal's file transfers: each desktop's owner browses, downloads and uploads their own files from the browser, every file opened by deskd-files as that user."),
        ("metrics", "Prometheus metrics over HTTP: sessions by state, starts and their latency, ends by reason, viewers, free displays, the gateway's connections and refusals, deskd's memory. Off unless listen is set."),
    ]

    /// Every key deskd knows. Templates/deskd.toml shows each one, commented out, and
    /// docs/man/deskd.toml.5 is generated from this table (make man).
    static let keys: [Key] = [
        Key("daemon", "socket", takes: "an absolute path", default: "\"/run/deskd/deskd.sock\"",
            "The control socket deskctl talks to, mode 0666: any local user may connect, and what they may do is decided from the kernel's peer credentials. deskd --socket and DESKD_SOCKET override it."
        ) { c, v throws(Reason) in c.socketPath = try absolutePath(v) },
        Key("daemon", "runtime_directory", takes: "an absolute path", default: "\"/run/deskd\"",
            "Runtime state, on tmpfs: session records (sessions/ID.json), each session's directory (by-id/ID/: its password file, X cookie, xstartup and RFB socket) and the display links (displays/N). A reboot ends every session, and secrets never reach a disk."
        ) { c, v throws(Reason) in c.runtimeDirectory = try absolutePath(v) },
        Key("daemon", "state_directory", takes: "an absolute path", default: "\"/var/lib/deskd\"",
            "Persistent state: the audit trail (audit.log, rotated to audit.log.1 at 16 MiB) and the sessions' logs (logs/UID/ID/)."
        ) { c, v throws(Reason) in c.stateDirectory = try absolutePath(v) },
        Key("daemon", "admin_group", takes: "a group name", default: "\"deskd-admin\"",
            "Members of this group, as the account database lists them, administer every user's sessions, as root does."
        ) { c, v throws(Reason) in c.adminGroup = try name(v) },
        Key("daemon", "log_level", takes: "one of trace, debug, info, notice, warning, error, critical", default: "\"info\"",
            "The least severe message deskd logs (to stderr, which systemd sends to the journal)."
        ) { c, v throws(Reason) in c.logLevel = try oneOf(v, ["trace", "debug", "info", "notice", "warning", "error", "critical"]) },
        Key("daemon", "max_connections", takes: "a whole number from 1 to 65536", default: "128",
            "Control connections open at once, in all. Root is never turned away."
        ) { c, v throws(Reason) in c.maxConnections = try positive(v, max: 65536) },
        Key("daemon", "max_connections_per_user", takes: "a whole number from 1 to 65536", default: "16",
            "Control connections open at once per uid, so one user's silent clients cannot hold them all."
        ) { c, v throws(Reason) in c.maxConnectionsPerUser = try positive(v, max: 65536) },

        Key("sessions", "xvnc", takes: "an absolute path", default: "\"/usr/bin/Xtigervnc\"",
            "The Xvnc server every desktop runs in."
        ) { c, v throws(Reason) in c.xvncPath = try absolutePath(v) },
        Key("sessions", "templates", takes: "a list of absolute paths", default: "[]",
            "Template directories searched before /etc/deskd/templates, /usr/local/share/deskd/templates and /usr/share/deskd/templates; the first NAME.xstartup found is desktop NAME."
        ) { c, v throws(Reason) in c.templateDirectories = try strings(v).map(checkedAbsolute) + DaemonConfiguration().templateDirectories },
        Key("sessions", "default_desktop", takes: "a template name (lowercase letters, digits, - and _)", default: "\"xterm\"",
            "The desktop a start gets when it names none (deskctl start --desktop)."
        ) { c, v throws(Reason) in c.defaultDesktop = try desk(v) { text throws(DeskError) in try XstartupTemplate.validate(desktopName: text) } },
        Key("sessions", "user_xstartup", takes: "true or false", default: "false",
            "When a start names no desktop, run the user's own ~/.vnc/xstartup instead, if it is an executable file, or else ~/.config/tigervnc/xstartup (where TigerVNC 1.14 and later keep it). It runs as the user; deskd itself never opens it."
        ) { c, v throws(Reason) in c.honourUserXstartup = try bool(v) },
        Key("sessions", "default_geometry", takes: "WIDTHxHEIGHT", default: "\"1920x1080\"",
            "The screen size a start gets when it names none (deskctl start --geometry)."
        ) { c, v throws(Reason) in c.defaultGeometry = try desk(v) { text throws(DeskError) in try Geometry(parsing: text) } },
        Key("sessions", "default_depth", takes: "16, 24 or 32", default: "24",
            "The colour depth a start gets when it names none (deskctl start --depth)."
        ) { c, v throws(Reason) in
            guard let depth = v.int, ColorDepth.allowed.contains(depth) else { throw Reason("must be 16, 24 or 32, not \(v)") }
            c.defaultDepth = depth
        },
        Key("sessions", "start_timeout", takes: "a duration", default: "\"20s\"",
            "The deadline of a start: deskd-session's login, Xvnc's RFB handshake and the desktop's first X connection all come within it. A start whose Xvnc has not answered by then fails; a desktop still running but not yet on its display is answered anyway, with a line in its log. A working desktop reaches its display in milliseconds: this is a bound, never a wait."
        ) { c, v throws(Reason) in c.startTimeout = .seconds(try duration(v)) },
        Key("sessions", "kill_grace", takes: "a duration", default: "\"3s\"",
            "Between SIGTERM and SIGKILL when a session is killed."
        ) { c, v throws(Reason) in c.killGrace = .seconds(try duration(v)) },
        Key("sessions", "desktop_exit_ends_session", takes: "true or false", default: "true",
            "End the session when its desktop (xstartup) exits, as vncserver does. false keeps Xvnc running (deskd --keep-session-on-desktop-exit)."
        ) { c, v throws(Reason) in c.desktopExitEndsSession = try bool(v) },
        Key("sessions", "idle_limit", takes: "a duration", default: nil,
            "deskd's own idle policy: kill sessions that have had no viewer this long (a session nobody ever connected to counts from its start). deskctl reap --idle does the same from cron or a timer."
        ) { c, v throws(Reason) in c.idleLimitSeconds = try duration(v) },
        Key("sessions", "xvnc_max_idle", takes: "a duration", default: nil,
            "Xvnc's -MaxIdleTime: Xvnc exits after this long without input."
        ) { c, v throws(Reason) in c.xvncMaxIdleSeconds = try duration(v) },
        Key("sessions", "xvnc_max_disconnection", takes: "a duration", default: nil,
            "Xvnc's -MaxDisconnectionTime: Xvnc exits after this long with no viewer (counted from its start, so an unvisited session ends too)."
        ) { c, v throws(Reason) in c.xvncMaxDisconnectionSeconds = try duration(v) },
        Key("sessions", "path", takes: "a string", default: "\"/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games\"",
            "PATH inside sessions."
        ) { c, v throws(Reason) in c.sessionPath = try string(v) },
        Key("sessions", "log_bytes", takes: "a whole number of bytes from 1 to 1073741824", default: "1048576",
            "Xvnc's and the desktop's output are kept per session under the state directory (logs/UID/ID/, for deskctl logs), each up to this many bytes plus one older generation."
        ) { c, v throws(Reason) in c.sessionLogBytes = try positive(v, max: 1 << 30) },
        Key("sessions", "journal_output", takes: "true or false", default: "false",
            "Under systemd, also copy every line of the display server's and the desktop's output to the journal, prefixed [ID :N server] or [ID :N desktop]. Off by default: the journal is readable by the groups adm and systemd-journal, not only by the desktop's owner, and a desktop's output can name the files, sites and commands its owner opened. deskctl logs shows the kept logs to the owner and admins alone, on or off. A reload applies it to desktops started after it."
        ) { c, v throws(Reason) in c.journalOutput = try bool(v) },
        Key("sessions", "keep_logs", takes: "a whole number from 0 to 100000", default: "10",
            "Each user keeps the logs of this many ended sessions for deskctl logs; older ones are removed. At most users \u{00D7} keep_logs \u{00D7} 4 \u{00D7} log_bytes of disk (40 MiB per user by default)."
        ) { c, v throws(Reason) in c.keptSessionLogs = try nonNegative(v, max: 100_000) },

        Key("limits", "minimum_uid", takes: "a whole number from 1 to 2147483647", default: "1000",
            "Accounts below this uid are system accounts and get no desktop (root never does)."
        ) { c, v throws(Reason) in c.minimumUID = UInt32(try positive(v, max: Int(Int32.max))) },
        Key("limits", "max_sessions_per_user", takes: "a whole number from 1 to the number of displays in limits.displays", default: "4",
            "Sessions one user may have at once. It may exceed max_sessions, which then caps each user as it caps the host."
        ) { c, v throws(Reason) in c.limits.maxSessionsPerUser = try sessionCount(v) },
        Key("limits", "max_sessions", takes: "a whole number from 1 to the number of displays in limits.displays", default: nil,
            "Sessions on the host at once; when unset, as many as limits.displays has free displays. With displays = \"1-2000\" (sessions on Unix sockets), up to 2000."
        ) { c, v throws(Reason) in c.limits.maxSessions = try sessionCount(v) },
        Key("limits", "allowed_users", takes: "a list of user names", default: "[]",
            "If this or allowed_groups is set, only these users, or members of those groups, get a desktop. Empty: every account from minimum_uid up."
        ) { c, v throws(Reason) in c.limits.allowedUsers = try strings(v).map(checkedName) },
        Key("limits", "allowed_groups", takes: "a list of group names", default: "[]",
            "If this or allowed_users is set, only members of these groups, or those users, get a desktop."
        ) { c, v throws(Reason) in c.limits.allowedGroups = try strings(v).map(checkedName) },
        Key("limits", "allowed_desktops", takes: "a list of template names", default: "[]",
            "If set, only these desktops (template names) may be started. Empty: any template found."
        ) { c, v throws(Reason) in
            c.limits.allowedDesktops = try strings(v).map { text throws(Reason) in try desk(text) { text throws(DeskError) in try XstartupTemplate.validate(desktopName: text) } }
        },
        Key("limits", "displays", takes: "a range \"LOW-HIGH\" within 1-2000", default: "\"1-99\"",
            "The X displays deskd allocates from, lowest free first. A display another X server holds is skipped and shown by deskctl list as foreign. Sessions on their Unix socket (network.listen = \"unix\") need no port, so the range may reach :2000; with TCP, every display's port network.port_base + N must stay clear of 6000-6063, X's own."
        ) { c, v throws(Reason) in c.displayRange = try displayRange(v) },
        Key("limits", "min_geometry", takes: "WIDTHxHEIGHT", default: "\"320x200\"",
            "The smallest screen a user may ask for."
        ) { c, v throws(Reason) in c.limits.minimumGeometry = try desk(v) { text throws(DeskError) in try Geometry(parsing: text) } },
        Key("limits", "max_geometry", takes: "WIDTHxHEIGHT", default: "\"8192x8192\"",
            "The largest screen a user may ask for."
        ) { c, v throws(Reason) in c.limits.maximumGeometry = try desk(v) { text throws(DeskError) in try Geometry(parsing: text) } },
        Key("limits", "session_tasks", takes: "a whole number from 1 to 4194304", default: nil,
            "Each session's cgroup holds at most this many tasks, so a fork bomb stops there. Needs the pids controller delegated to deskd's cgroup (deskd.service has Delegate=yes); without it deskd logs a warning and only pam_limits (nproc in /etc/security/limits.conf) applies."
        ) { c, v throws(Reason) in c.sessionTasksMax = try positive(v, max: 4_194_304) },
        Key("limits", "session_memory", takes: "a size of at least 64M: bytes, or a number with K, M, G or T", default: nil,
            "Each session's cgroup may use at most this much memory (\"512M\", \"8G\"). Needs the memory controller delegated to deskd's cgroup, as session_tasks does."
        ) { c, v throws(Reason) in c.sessionMemoryMax = try byteSize(v) },
        Key("limits", "require_login_shell", takes: "true or false", default: "true",
            "Refuse a desktop to an account that cannot log in: a shell that is nologin or false, the overflow account (uid 65534, nobody), or a home directory that does not exist. Its desktop would die at once; false starts it anyway."
        ) { c, v throws(Reason) in c.requireLoginShell = try bool(v) },
        Key("limits", "memory_reserve", takes: "a size of at least 64M: bytes, or a number with K, M, G or T", default: nil,
            "Admission by memory: a start that would leave less than this available (the kernel's MemAvailable, less memory_per_session) is refused with a sentence naming the numbers, so desktops cannot push the host into swap or the OOM killer. Unset: no admission by memory."
        ) { c, v throws(Reason) in c.memoryReserve = try byteSize(v) },
        Key("limits", "memory_per_session", takes: "a size of at least 64M: bytes, or a number with K, M, G or T", default: "\"256M\"",
            "What memory_reserve counts a new desktop to take; deskctl status shows how many more fit."
        ) { c, v throws(Reason) in c.memoryPerSession = try byteSize(v) },
        Key("limits", "starts_per_minute", takes: "a whole number from 0 to 6000", default: "10",
            "Starts per minute per user (root is not limited); 0 turns the limit off."
        ) { c, v throws(Reason) in
            let n = try nonNegative(v, max: 6000)
            c.startsPerMinute = n == 0 ? nil : n
        },

        Key("network", "port_base", takes: "a whole number from 1024 to 65534", default: "5900",
            "With TCP (network.listen other than \"unix\"), display :N listens on this plus N: 5901 for :1 by default. Displays past :99 on TCP need another base, since 6000-6063 are X's own ports, for example 10000 (then :1500 is 11500)."
        ) { c, v throws(Reason) in
            let base = try positive(v, max: 65534)
            guard base >= 1024 else { throw Reason("must be from 1024 to 65534, not \(base)") }
            c.vncExposure.portBase = base
        },
        Key("network", "listen", takes: "\"unix\", \"loopback\" or an IPv4 address", default: "\"unix\"",
            "Where Xvnc listens for viewers. \"unix\": no TCP port, only a 0600 socket of the owner's, /run/deskd/displays/N/rfb.sock, reached with ssh -L 5901:/run/deskd/displays/N/rfb.sock USER@HOST. \"loopback\": TCP 127.0.0.1:5900+N (network.port_base+N), where every local user can reach it and try the password. An address (\"0.0.0.0\" for every interface): TCP on it; use X509Vnc and a certificate."
        ) { c, v throws(Reason) in
            let text = try string(v)
            switch text {
            case "unix": c.vncExposure.listen = .unixSocket
            case "loopback", "localhost", "127.0.0.1": c.vncExposure.listen = .loopback
            case _ where isIPv4(text): c.vncExposure.listen = .address(text)
            default: throw Reason("must be \"unix\", \"loopback\" or an IPv4 address such as \"0.0.0.0\", not \"\(text)\"")
            }
        },
        Key("network", "security_types", takes: "a list of VncAuth, TLSVnc, X509Vnc", default: "[\"VncAuth\"]",
            "Xvnc's -SecurityTypes: VncAuth (the session password), TLSVnc (anonymous TLS) and X509Vnc (TLS with tls_certificate). None is refused: a desktop without authentication is anyone's who reaches it."
        ) { c, v throws(Reason) in
            let types = try strings(v)
            if types.contains(where: { $0.lowercased() == "none" }) {
                throw Reason("may not contain None: on a shared host every local user reaches loopback, so a desktop without authentication is everyone's; use VncAuth, TLSVnc or X509Vnc")
            }
            guard !types.isEmpty, types.allSatisfy(VNCExposure.knownSecurityTypes.contains) else {
                throw Reason("must list one or more of \(VNCExposure.knownSecurityTypes.joined(separator: ", "))")
            }
            c.vncExposure.securityTypes = types
        },
        Key("network", "tls_certificate", takes: "an absolute path", default: nil,
            "The certificate (PEM) for X509Vnc, with TCP only; set with tls_key. deskd reads it as root and gives each session's Xvnc its own copy, so it may stay root-only (0600)."
        ) { c, v throws(Reason) in c.vncExposure.tlsCertificate = try absolutePath(v) },
        Key("network", "tls_key", takes: "an absolute path", default: nil,
            "The private key (PEM) of tls_certificate; set with it, and kept root-only like it."
        ) { c, v throws(Reason) in c.vncExposure.tlsKey = try absolutePath(v) },
        Key("web", "listen", takes: "\"off\" or ADDRESS:PORT", default: "\"off\"",
            "Where the gateway listens for browsers, as \"127.0.0.1:8443\" or \"0.0.0.0:443\". Anywhere but loopback it needs tls_certificate and tls_key; plain HTTP on loopback is for running behind nginx or Apache, which then do TLS (see public_url). If the port is taken or a TLS file cannot be read, deskd serves on without the gateway and tries again, every minute at most; deskctl status says why and who holds the port. Any local user can take a port above 1023 first, and browsers would then reach their program: prefer 443 or another port below 1024."
        ) { c, v throws(Reason) in
            guard let address = try listenAddress(v, example: "127.0.0.1:8443") else { c.web.host = nil; return }
            c.web.host = address.host
            c.web.port = address.port
        },
        Key("web", "user", takes: "an account name", default: "\"deskd-web\"",
            "The unprivileged account deskd-web, the web front, runs as: it serves the gateway and the metrics endpoint (HTTP, TLS and WebSocket) so that deskd, as root, parses none of them. deskd binds their ports and reads the TLS files itself and hands them over on its front socket (runtime directory/web.sock, this account's alone); every link, cookie and desktop stays deskd's decision. The package creates the account; elsewhere: useradd --system --user-group --no-create-home --home-dir /nonexistent deskd-web."
        ) { c, v throws(Reason) in
            let name = try string(v)
            guard !name.isEmpty, name != "root", name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
                throw Reason("must name an unprivileged account such as \"deskd-web\", not \"\(name)\"")
            }
            c.web.user = name
        },
        Key("web", "deny_users", takes: "a list of account names", default: "[\"root\"]",
            "Accounts that may not log in to the web portal, whatever their password: root by default (an admin logs in as themselves and administers from there)."
        ) { c, v throws(Reason) in c.web.denyUsers = Set(try strings(v)) },
        Key("web", "sso_header", takes: "a header name, such as \"X-Remote-User\"", default: nil,
            "Single sign-on done by the site's reverse proxy (OIDC or SAML in Apache's mod_auth_openidc, nginx with oauth2-proxy): the header in which the proxy names the signed-in account. A request that carries it is believed only from an address in trusted_proxies, and is refused from anywhere else (a browser can write any header). The account must exist here and not be in deny_users; its login then lives and ends like a password login. The proxy must set the header on every request and strip it from what browsers send. Unset: passwords only."
        ) { c, v throws(Reason) in
            let name = try string(v)
            let reserved: Set<String> = ["host", "cookie", "origin", "content-type", "content-length", "transfer-encoding", "connection", "upgrade",
                                         "x-forwarded-for", "x-deskd-csrf", "x-deskd-background", "authorization", "sec-websocket-key"]
            guard !name.isEmpty, name.utf8.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
                  !reserved.contains(name.lowercased()) else {
                throw Reason("must be a header name of your proxy's own, such as \"X-Remote-User\", not \"\(name)\"")
            }
            c.web.singleSignOnHeader = name
        },
        Key("web", "session_idle", takes: "a duration, such as \"15m\"", default: "\"15m\"",
            "A portal login with no request for this long ends; the page counts it down and logs out."
        ) { c, v throws(Reason) in c.web.sessionIdleSeconds = try duration(v) },
        Key("web", "session_lifetime", takes: "a duration, such as \"12h\"", default: "\"12h\"",
            "Any portal login ends this long after it began, however busy."
        ) { c, v throws(Reason) in c.web.sessionLifetimeSeconds = try duration(v) },
        Key("web", "tls_certificate", takes: "an absolute path", default: nil,
            "The gateway's certificate (PEM, with its chain), read by deskd as root at start."
        ) { c, v throws(Reason) in c.web.tlsCertificate = try absolutePath(v) },
        Key("web", "tls_key", takes: "an absolute path", default: nil,
            "The certificate's private key (PEM); it may stay root-only (0600)."
        ) { c, v throws(Reason) in c.web.tlsKey = try absolutePath(v) },
        Key("web", "tls_minimum", takes: "\"1.2\" or \"1.3\"", default: "\"1.2\"",
            "The oldest TLS a browser may use, with tls_certificate. \"1.2\" takes TLS 1.2 with ECDHE and AES-GCM or ChaCha20 only, and 1.3: what every current browser speaks. \"1.3\" refuses 1.2 as well, where a policy asks for that. TLS 1.0 and 1.1 are never accepted."
        ) { c, v throws(Reason) in
            c.web.tlsMinimum = WebSettings.TLSMinimum(rawValue: try oneOf(v, WebSettings.TLSMinimum.allCases.map(\.rawValue)))!
        },
        Key("web", "novnc_dir", takes: "an absolute path", default: "\"/usr/share/novnc\"",
            "Where noVNC's files are (Debian's package novnc puts them here); the gateway serves them as they are."
        ) { c, v throws(Reason) in c.web.novncDirectory = try absolutePath(v) },
        Key("web", "clipboard", takes: "\"both\", \"to-browser\", \"from-browser\" or \"off\"", default: "\"both\"",
            "Which way cut text may cross the gateway, whatever the browser asks. The gateway drops a browser's cut text itself; the desktop's is kept from browsers by starting Xvnc with -SendCutText=0, so with \"off\" or \"from-browser\" native viewers get none either."
        ) { c, v throws(Reason) in
            c.web.clipboard = WebSettings.Clipboard(rawValue: try oneOf(v, WebSettings.Clipboard.allCases.map(\.rawValue)))!
        },
        Key("web", "public_url", takes: "an http or https URL", default: nil,
            "The start of every link, when a proxy serves the gateway elsewhere (\"https://desk.example.org\"); unset, links name the gateway's own address."
        ) { c, v throws(Reason) in
            let text = try string(v)
            guard text.hasPrefix("https://") || text.hasPrefix("http://"), !text.contains(" "), !text.contains("#") else {
                throw Reason("must be a URL such as \"https://desk.example.org\", not \"\(text)\"")
            }
            c.web.publicURL = text
        },
        Key("web", "max_connections", takes: "a whole number from 2 to 16384", default: "256",
            "Connections the gateway holds open at once: pages, logins, portal pages' live updates and desktops in browsers together. Live updates may take half of them at most (and a few per login and per account), so pages, links and logins always have room. Each connection is a descriptor of deskd-web's, and each desktop in a browser one more of deskd's."
        ) { c, v throws(Reason) in
            let value = try positive(v, max: 16384)
            guard value >= 2 else { throw Reason("must be at least 2, not \(value)") }
            c.web.maxConnections = value
        },
        Key("web", "max_connections_per_address", takes: "a whole number from 1 to 16384", default: "32",
            "Connections one client may hold open at once, so that no one client can take every slot. A client is a remote address (an IPv6 address's /64), or, for a browser on this host (any 127.0.0.0/8 address or ::1), the account that made its connection, which the kernel knows: a local user is one client however many loopback addresses they use, and each user's own ssh -L tunnel is theirs. Browsers behind NAT share an address: raise it there. Behind a reverse proxy, name it in trusted_proxies so that each browser is counted by its own address."
        ) { c, v throws(Reason) in c.web.maxConnectionsPerAddress = try positive(v, max: 16384) },
        Key("web", "trusted_proxies", takes: "a list of IPv4 addresses", default: "[]",
            "The reverse proxies in front of the gateway (\"127.0.0.1\" for nginx or Apache on this host) whose X-Forwarded-For header deskd believes: a browser coming through one is counted against max_connections_per_address by the address the proxy appended (the header's last entry; what came before it proves nothing). From any other peer the header is ignored, since a browser can write it. A loopback proxy's address is every local user's too: a local user who connects to the gateway directly can name any address, so trust loopback only where local users are trusted not to spoof the cap."
        ) { c, v throws(Reason) in
            let addresses = try strings(v)
            if let bad = addresses.first(where: { !isIPv4($0) }) {
                throw Reason("must list IPv4 addresses such as \"127.0.0.1\" (one each, no ranges), not \"\(bad)\"")
            }
            c.web.trustedProxies = Set(addresses)
        },
        Key("web", "idle_timeout", takes: "a duration, such as \"1h\" or \"30m\"", default: "\"1h\"",
            "A browser's connection to a desktop with nothing in either direction for this long is closed. The gateway pings each browser well within it, so a browser that is still there answers and stays, however long its desktop is still; what is closed is a connection whose browser has gone without a word."
        ) { c, v throws(Reason) in c.web.idleTimeoutSeconds = try duration(v) },
        Key("slurm", "listen", takes: "\"off\" or ADDRESS:PORT", default: "\"off\"",
            "Where deskd listens for desktop jobs reporting back, as \"10.0.0.1:7010\": an address of this login node that the compute nodes reach. Each job proves it holds its session's key before a word is taken from it, and deskd proves the same to the job; no other user's process can pose as one."
        ) { c, v throws(Reason) in
            let address = try listenAddress(v, example: "10.0.0.1:7010")
            // The address is the one jobs are told to report to: a wildcard reaches nothing.
            guard address?.host != "0.0.0.0" else { throw Reason("must name an address of this host that compute nodes reach, not 0.0.0.0") }
            c.slurm.listen = address
        },
        Key("slurm", "job_program", takes: "an absolute path", default: "\"/usr/libexec/deskd/deskd-job\"",
            "deskd-job on the compute nodes: the job's one process, which runs the desktop as the user inside the job's allocation and ends every process of it with the job. Install deskd's package on every compute node; no daemon of deskd's runs there."
        ) { c, v throws(Reason) in
            let path = try absolutePath(v)
            guard SlurmSubmission.isUsableProgramPath(path) else { throw Reason("must be a path without spaces or quotes") }
            c.slurm.jobProgram = path
        },
        Key("slurm", "partition", takes: "a partition name", default: nil,
            "The partition a desktop's job goes to when the start names none (deskctl start --partition); unset, Slurm's default partition."
        ) { c, v throws(Reason) in c.slurm.partition = try slurmName(v, what: "partition", flag: "--partition") },
        Key("slurm", "account", takes: "an account name", default: nil,
            "The account jobs are charged to when the start names none (deskctl start --account); unset, the user's default."
        ) { c, v throws(Reason) in c.slurm.account = try slurmName(v, what: "account", flag: "--account") },
        Key("slurm", "gres", takes: "generic resources, as gpu:1", default: nil,
            "Generic resources every desktop's job asks for when the start names none (deskctl start --gres)."
        ) { c, v throws(Reason) in c.slurm.gres = try desk(v) { text throws(DeskError) in try SlurmOptions(gres: text).checked().gres ?? text } },
        Key("slurm", "time", takes: "a time limit as Slurm writes it, such as 4:00:00", default: "\"4:00:00\"",
            "The time limit of a desktop's job when the start names none (deskctl start --time). The partition's own MaxTime still applies."
        ) { c, v throws(Reason) in c.slurm.time = try desk(v) { text throws(DeskError) in try SlurmOptions(time: text).checked().time ?? text } },
        Key("slurm", "max_time", takes: "a time limit as Slurm writes it, such as 8:00:00", default: nil,
            "The longest time a desktop may ask for (deskctl start --time, the portal's form), whatever its partition's MaxTime allows; unset, the partition's. A start over it is refused with a sentence before anything is submitted, as is one over its partition's MaxTime or its nodes' cores or GPUs (read from sinfo)."
        ) { c, v throws(Reason) in
            let text = try string(v)
            guard let seconds = SlurmTime(slurm: text)?.seconds, seconds > 0 else { throw Reason("must be a time limit such as \"8:00:00\" or \"1-00:00:00\", not \"\(text)\"") }
            c.slurm.maxTimeSeconds = seconds
        },
        Key("slurm", "extend_max", takes: "a duration, such as \"2h\"", default: "\"0s\"",
            "How much longer a cluster desktop may be made, in all, by its owner or an admin (deskctl extend, the portal's Extend): deskd raises its job's time limit as Slurm's operator (scontrol update TimeLimit=+…), which a user cannot. 0s: no Extend."
        ) { c, v throws(Reason) in
            let text = v.string ?? ""
            c.slurm.extendMaxSeconds = ["0", "0s", "0m", "0h"].contains(text) || v.int == 0 ? 0 : try duration(v)
        },
        Key("slurm", "max_per_user", takes: "a whole number from 1 to 1000", default: "2",
            "Cluster desktops one user may have at once, queued ones included; admins starting for a user count against that user."
        ) { c, v throws(Reason) in c.slurm.maxPerUser = try positive(v, max: 1000) },
        Key("slurm", "warn_before", takes: "a duration", default: "\"5m\"",
            "Slurm signals a desktop's job this long before its time limit (sbatch --signal=B:USR1@N), and the desktop shows its user a message saying when it ends."
        ) { c, v throws(Reason) in c.slurm.warnBeforeSeconds = try duration(v) },
        Key("slurm", "start_wait", takes: "a duration", default: "\"30s\"",
            "How long deskctl start --slurm waits for the desktop to run; a job still queued then is answered as queued, with Slurm's reason, and deskctl list follows it."
        ) { c, v throws(Reason) in c.slurm.startWait = .seconds(try duration(v)) },
        Key("slurm", "poll_interval", takes: "a duration", default: "\"2s\"",
            "How often deskd asks squeue after its desktops' jobs: a job ended by Slurm (a time limit, scancel, a node's failure) ends its session within this."
        ) { c, v throws(Reason) in c.slurm.pollInterval = .seconds(try duration(v)) },
        Key("slurm", "commands", takes: "an absolute path", default: "\"/usr/bin\"",
            "The directory of sbatch, squeue and scancel."
        ) { c, v throws(Reason) in c.slurm.commandDirectory = try absolutePath(v) },

        Key("metrics", "listen", takes: "\"off\" or ADDRESS:PORT", default: "\"off\"",
            "Where deskd serves /metrics in Prometheus's text format, as \"127.0.0.1:9466\". Plain HTTP with counts and no names; keep it on loopback or a management network. deskctl metrics shows the same text to admins whether or not this is set. If the port is taken, deskd serves on without it and tries again (deskctl status says who holds it)."
        ) { c, v throws(Reason) in c.metricsListen = try listenAddress(v, example: "127.0.0.1:9466") },
    ] + fileKeys

    /// The keys by section and name, as the parser looks them up.
    static let schema: [String: [String: Apply]] = Dictionary(grouping: keys, by: \.section).mapValues { keys in
        Dictionary(uniqueKeysWithValues: keys.map { ($0.name, $0.apply) })
    }
}
