import DeskCore
import Glibc

/// How a new session's endpoint answered while it started.
public enum RFBReadiness: Sendable, Equatable {
    case answered
    /// Xvnc ended first.
    case exited
    case timedOut
    /// Something other than the session's Xvnc holds the endpoint.
    case impostor(String)
}

extension RFBReadiness {
    /// Greets `endpoint` until the server answers RFB (from `xvnc` and no one else), ends
    /// (`serverRuns` false), or `deadline` passes; `pause` between attempts. A refusal or
    /// silence is a server not ready yet. deskd's look at a local desktop and a cluster job's at
    /// its own are this one loop.
    public static func awaitAnswer(_ endpoint: RFBEndpoint, host: String = "127.0.0.1", xvnc: pid_t, until deadline: ContinuousClock.Instant,
                             attemptMilliseconds: Int, serverRuns: () -> Bool, pause: () -> Void) -> RFBReadiness {
        while true {
            guard serverRuns() else { return .exited }
            switch RFBHandshake.attempt(endpoint, host: host, xvnc: xvnc, timeoutMilliseconds: attemptMilliseconds) {
            case .answered: return .answered
            case .impostor(let what): return .impostor(what)
            case .refused, .silent: break
            }
            if ContinuousClock.now > deadline { return .timedOut }
            pause()
        }
    }
}

