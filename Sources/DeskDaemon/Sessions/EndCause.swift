import DeskCore

/// Why a session ended: the sentence `history` and `logs` show, and the kind the metrics count.
enum EndCause: Sendable, Equatable {
    /// `deskctl kill` by this caller.
    case killed(by: String)
    /// `deskctl reap --idle` by this caller.
    case reaped(by: String)
    /// The configured idle limit (`sessions.idle_limit`).
    case idleLimit
    /// Xvnc or the desktop exited on its own.
    case exited(role: String)
    /// Found dead when deskd came back.
    case goneWhileAway
    /// The start failed at this step.
    case startFailed(String)
    /// A cluster desktop's Slurm job ended (TIMEOUT, CANCELLED, NODE_FAIL, PREEMPTED, FAILED,
    /// COMPLETED…), with what its job said of it, if anything.
    case jobEnded(state: String, detail: String?)

    var reason: String {
        switch self {
        case .killed(let who): "killed by \(who)"
        case .reaped(let who): "reaped idle by \(who)"
        case .idleLimit: "idle limit"
        case .exited(let role): "\(role) exited"
        case .goneWhileAway: "gone while deskd was away"
        case .startFailed(let step): step
        case .jobEnded(let state, let detail): "Slurm job \(state)" + (detail.map { ": \($0)" } ?? "")
        }
    }

    /// The `reason` label of deskd_sessions_ended_total: a few fixed values, no names.
    enum Kind: String, CaseIterable {
        case killed, reaped, idleLimit = "idle-limit", exited, gone, startFailed = "start-failed", jobEnded = "job-ended"
    }

    var kind: Kind {
        switch self {
        case .killed: .killed
        case .reaped: .reaped
        case .idleLimit: .idleLimit
        case .exited: .exited
        case .goneWhileAway: .gone
        case .startFailed: .startFailed
        case .jobEnded: .jobEnded
        }
    }
}

extension Caller {
    /// The caller's account name, or their uid where the account database has none.
    var displayName: String { userName ?? "uid \(uid)" }
}
