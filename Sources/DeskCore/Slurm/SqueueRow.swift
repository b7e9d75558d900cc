import FoundationEssentials

/// One line of `squeue --noheader --states=all --format=FORMAT` as Slurm 22.05 prints it: the
/// text form, whose fields deskd picks itself (squeue's JSON changes shape between releases).
/// No field deskd asks for carries text a user chose (not the job's name or comment), so the
/// separator cannot be forged; a line that does not parse is dropped, not guessed at.
public struct SqueueRow: Sendable, Equatable {
    /// The format deskd passes: job id, state, reason, node, partition, time limit, time left,
    /// and start time (expected, for a pending job).
    public static let format = "%i|%T|%r|%N|%P|%l|%L|%S"

    public var jobId: String
    public var state: String
    public var reason: String?
    public var node: String?
    public var partition: String?
    public var timeLimit: String?
    /// Seconds until the time limit, for a running job with one.
    public var secondsLeft: Int?
    /// When it started, or for a pending job when Slurm expects it to (the host's local time,
    /// as squeue prints it); nil where squeue says N/A.
    public var startsAt: Date?

    public init(jobId: String, state: String, reason: String? = nil, node: String? = nil, partition: String? = nil,
                timeLimit: String? = nil, secondsLeft: Int? = nil) {
        self.jobId = jobId
        self.state = state
        self.reason = reason
        self.node = node
        self.partition = partition
        self.timeLimit = timeLimit
        self.secondsLeft = secondsLeft
    }

    /// Parses one line; nil for anything not in the format's shape. `clock` is the host's, whose
    /// local time squeue writes the start time in.
    public init?(line: Substring, clock: WallClock) {
        let fields = line.split(separator: "|", omittingEmptySubsequences: false)
        // Seven fields: a deskd before the start time was asked for (its tests' lines, too).
        guard fields.count == 7 || fields.count == 8 else { return nil }
        let id = String(fields[0])
        guard !id.isEmpty, id.utf8.count <= 32, id.utf8.allSatisfy({ (48...57).contains($0) || $0 == UInt8(ascii: "_") }) else { return nil }
        let state = String(fields[1])
        guard !state.isEmpty, state.utf8.count <= 32, state.utf8.allSatisfy({ (65...90).contains($0) || $0 == UInt8(ascii: "_") }) else { return nil }
        func value(_ field: Substring) -> String? {
            let text = String(field)
            return ["", "None", "(null)", "N/A", "n/a", "None assigned"].contains(text) || text.utf8.count > 256 ? nil : text
        }
        self.jobId = id
        self.state = state
        self.reason = value(fields[2])
        self.node = value(fields[3])
        self.partition = value(fields[4])
        self.timeLimit = value(fields[5])
        self.secondsLeft = value(fields[6]).flatMap { SlurmTime(slurm: $0)?.seconds }
        // A start time in another form (squeue prints "Unknown" for some) is no start time; the
        // row stands: a row dropped would read as a job Slurm no longer knows, and end its desktop.
        self.startsAt = fields.count == 8 ? value(fields[7]).flatMap { Self.localTime($0, clock: clock) } : nil
    }

    /// `2026-11-26T12:30:00` on `clock` (squeue's `%S`, the host's local time); nil for anything else.
    static func localTime(_ text: String, clock: WallClock) -> Date? {
        let parts = text.split(whereSeparator: { $0 == "-" || $0 == "T" || $0 == ":" }).map { Int($0) }
        guard text.utf8.count == 19, parts.count == 6, parts.allSatisfy({ $0 != nil }) else { return nil }
        let v = parts.map { $0! }
        guard (1...12).contains(v[1]), (1...31).contains(v[2]), (0...23).contains(v[3]), (0...59).contains(v[4]), (0...60).contains(v[5]) else { return nil }
        return clock.instant(showing: CivilTime(year: v[0], month: v[1], day: v[2], hour: v[3], minute: v[4], second: v[5]))
    }

    /// Every row of squeue's output that parses, by job id.
    public static func parse(_ output: String, clock: WallClock) -> [String: SqueueRow] {
        var rows: [String: SqueueRow] = [:]
        for line in output.split(separator: "\n") {
            if let row = SqueueRow(line: line, clock: clock) { rows[row.jobId] = row }
        }
        return rows
    }

    /// The job as a session shows it, its end time reckoned from `now`.
    public func job(now: Date) -> SlurmJob {
        SlurmJob(jobId: jobId, node: state == "PENDING" ? nil : node, partition: partition, state: state,
                 reason: state == "PENDING" ? reason : nil, timeLimit: timeLimit,
                 endsAt: state == "RUNNING" ? secondsLeft.map { now.addingTimeInterval(Double($0)) } : nil,
                 expectedStart: state == "PENDING" ? startsAt.flatMap { $0 > now ? $0 : nil } : nil)
    }
}
