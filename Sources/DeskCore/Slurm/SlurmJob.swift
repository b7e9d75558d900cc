import FoundationEssentials

/// A desktop's Slurm job, as `list --json` shows it: `slurm: {jobId, node, partition, state,
/// reason, timeLimit, endsAt}`. What squeue said last, kept in the session's record so that a
/// restarted deskd knows which job to follow.
public struct SlurmJob: Codable, Sendable, Equatable {
    /// Slurm's job id (a number, kept as text: an array job's `12_3` is one too).
    public var jobId: String
    /// The compute node it runs on; nil while it is queued.
    public var node: String?
    public var partition: String?
    /// Slurm's job state: PENDING, RUNNING, COMPLETING, COMPLETED, CANCELLED, TIMEOUT, NODE_FAIL,
    /// PREEMPTED, FAILED, OUT_OF_MEMORY…
    public var state: String
    /// Why a pending job waits (`Resources`, `Priority`, `ReqNodeNotAvail, UnavailableNodes:node1`); nil when it runs.
    public var reason: String?
    /// The job's time limit as Slurm writes it (`4:00:00`, `1-00:00:00`, `UNLIMITED`).
    public var timeLimit: String?
    /// When the time limit ends it, once it runs with a limit.
    public var endsAt: Date?
    /// How much longer it has been made since it was submitted (`deskctl extend`), in seconds.
    public var extendedSeconds: Int?
    /// While it is queued: when Slurm expects to start it (its backfill's estimate), where it says.
    public var expectedStart: Date?

    public init(jobId: String, node: String? = nil, partition: String? = nil, state: String, reason: String? = nil,
                timeLimit: String? = nil, endsAt: Date? = nil, expectedStart: Date? = nil) {
        self.expectedStart = expectedStart
        self.jobId = jobId
        self.node = node
        self.partition = partition
        self.state = state
        self.reason = reason
        self.timeLimit = timeLimit
        self.endsAt = endsAt
    }

    /// Slurm's states after which a job runs no more (squeue keeps showing them for MinJobAge).
    public static let endStates: Set<String> = [
        "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
        "REVOKED", "SPECIAL_EXIT",
    ]

    public var hasEnded: Bool { Self.endStates.contains(state) }
    public var isPending: Bool { state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_HOLD" || state == "SUSPENDED" }

    /// Whole seconds left before the time limit, from `now`; nil without a limit.
    public func secondsLeft(now: Date) -> Int? {
        endsAt.map { max(0, Int($0.timeIntervalSince(now).rounded(.down))) }
    }
}
