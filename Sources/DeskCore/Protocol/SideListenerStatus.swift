import FoundationEssentials

/// A listener deskd runs beside its control socket — the browser gateway (`[web] listen`) or
/// the metrics endpoint (`[metrics] listen`) — as `deskctl status` shows it.
///
/// deskd serves its control socket and every desktop without them: one that cannot listen (a
/// local user holds the port first, a TLS file is missing) is tried again with a backoff, and
/// this says why it is not listening yet.
public struct SideListenerStatus: Codable, Sendable, Equatable {
    /// "gateway" or "metrics".
    public var name: String
    /// host:port as configured ("[::1]:8443" for IPv6).
    public var address: String
    public var listening: Bool
    /// Why it is not listening: one sentence, naming who holds the port where deskd can tell.
    public var problem: String?
    /// Attempts that failed since deskd started it.
    public var failedAttempts: Int
    /// When the next attempt is due, while it is not listening.
    public var nextAttemptAt: Date?

    public init(name: String, address: String, listening: Bool, problem: String? = nil, failedAttempts: Int = 0, nextAttemptAt: Date? = nil) {
        self.name = name
        self.address = address
        self.listening = listening
        self.problem = problem
        self.failedAttempts = failedAttempts
        self.nextAttemptAt = nextAttemptAt
    }

    /// "127.0.0.1:8443", "[::1]:8443".
    public static func address(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
