import Synchronization

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
