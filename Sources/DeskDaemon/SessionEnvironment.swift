import DeskCore
import DeskLinux
import Logging
import Synchronization

/// What every session and the service share: the host, where records, logs and the audit trail
/// go, the registry of displays, and the configuration in force.
struct SessionEnvironment: Sendable {
    let host: any HostSystem
    let store: SessionStore
    let archive: SessionLogArchive
    let audit: AuditTrail
    let registry: SessionRegistry
    let configuration: ConfigurationInForce
    let logger: Logger
    /// Under systemd, stderr is the journal: session output is copied there too.
    let journal: Bool
}

/// The configuration now in force: replaced whole on SIGHUP, read by whoever needs it at the
/// moment it needs it. Running sessions keep what they started with (their Xvnc arguments);
/// what applies later (kill grace, idle policy, kept logs) comes from here.
final class ConfigurationInForce: Sendable {
    private let current: Mutex<DaemonConfiguration>

    init(_ configuration: DaemonConfiguration) {
        self.current = Mutex(configuration)
    }

    var value: DaemonConfiguration { current.withLock { $0 } }

    func replace(_ configuration: DaemonConfiguration) { current.withLock { $0 = configuration } }
}

extension Session {
    /// The fields every log line about a session carries.
    var logMetadata: Logger.Metadata {
        ["session.display": "\(display)", "session.user": "\(user)", "session.pid": "\(pid)"]
    }
}
