import DeskCore
import DeskFrontProtocol
import DeskGatewayMetrics
import DeskHost
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
    /// Under systemd, stderr is the journal; session output is copied there only where
    /// sessions.journal_output says so.
    let journal: Bool
    /// One-time browser links and their cookies.
    let links: BrowserLinks
    /// The browsers deskd's web front relays now, by relay.
    let browsers: BrowserRelays
    /// The gateway's counters as the web front reports them, in deskd's metrics.
    let gatewayMetrics: GatewayMetrics
    let metrics: DaemonMetrics
    /// The gateway's and the metrics endpoint's listeners: listening, or why not.
    let listeners: SideListenerBoard
    /// Where sessions run what they start on their own: a task group the service group owns.
    let tasks: SessionTasks
    /// Cluster desktops' report listener and Slurm.
    let cluster: ClusterContext
    /// What portal pages wait on for their live updates.
    let changes = SessionChanges()
}

extension Session {
    /// The fields every log line about a session carries.
    var logMetadata: Logger.Metadata {
        ["session.display": "\(display)", "session.user": "\(user)", "session.pid": "\(pid)"]
    }
}
