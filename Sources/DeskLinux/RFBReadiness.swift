/// How a new session's endpoint answered while it started.
public enum RFBReadiness: Sendable, Equatable {
    case answered
    /// Xvnc ended first.
    case exited
    case timedOut
    /// Something other than the session's Xvnc holds the endpoint.
    case impostor(String)
}
