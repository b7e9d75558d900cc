@testable import DeskDaemon
import DeskCore
import Glibc
import Synchronization

/// Slurm in memory, for testing the daemon's cluster decisions without sbatch or squeue.
///
/// Every submission is kept with the user it ran as, its arguments and its script, and answered
/// with the next job id (4242, 4243…) or the refusal the test set. squeue answers with the rows
/// the test set, or not at all (nil). Cancels are kept. A test can hold a submission, a squeue
/// or a cancel in the middle (as a slow slurmctld would) to play what happens meanwhile.
final class FakeScheduler: SlurmScheduler {
    struct Submission: Sendable {
        var user: String
        var arguments: [String]
        var script: String
    }

    struct Cancel: Sendable, Equatable {
        var jobID: String
        var user: String
    }

    struct State {
        var submissions: [Submission] = []
        var partitions: [SlurmPartition]? = nil
        var extensions: [(jobID: String, seconds: Int)] = []
        var cancels: [Cancel] = []
        var nextJobID = 4242
        /// sbatch's refusal of the next submissions, while set.
        var refusal: DeskError?
        /// squeue's answer: nil, squeue did not answer.
        var rows: [String: SqueueRow]? = [:]
        /// While set, a submission waits in sbatch (after it has begun), a squeue after it has
        /// read its answer (as squeue's answer is made before it reaches deskd), a cancel in scancel.
        var holdSubmit = false
        var holdSqueue = false
        var holdCancel = false
        var submitsBegun = 0
        var squeueCalls = 0
        var cancelsBegun = 0
    }

    let state = Mutex(State())

    var submissions: [Submission] { state.withLock { $0.submissions } }
    var cancels: [Cancel] { state.withLock { $0.cancels } }
    var squeueCalls: Int { state.withLock { $0.squeueCalls } }

    func refuse(with refusal: DeskError?) { state.withLock { $0.refusal = refusal } }

    /// squeue's answer from now on: these rows (by job id), or no answer.
    func answer(_ rows: [SqueueRow]?) {
        state.withLock { $0.rows = rows.map { Dictionary(uniqueKeysWithValues: $0.map { ($0.jobId, $0) }) } }
    }

    func submit(_ submission: SlurmSubmission, user: String) -> Result<String, DeskError> {
        state.withLock { $0.submitsBegun += 1 }
        while state.withLock({ $0.holdSubmit }) { usleep(1000) }
        return state.withLock { state in
            state.submissions.append(Submission(user: user, arguments: submission.arguments, script: submission.script))
            if let refusal = state.refusal { return .failure(refusal) }
            defer { state.nextJobID += 1 }
            return .success(String(state.nextJobID))
        }
    }

    func desktopJobs() -> [String: SqueueRow]? {
        let rows = state.withLock { state in
            state.squeueCalls += 1
            return state.rows
        }
        while state.withLock({ $0.holdSqueue }) { usleep(1000) }
        return rows
    }

    func partitions() -> [SlurmPartition]? {
        state.withLock { $0.partitions }
    }

    func extend(jobID: String, bySeconds seconds: Int) -> (error: DeskError, mayHaveApplied: Bool)? {
        state.withLock { state in
            state.extensions.append((jobID, seconds))
            return state.refusal.map { ($0, false) }
        }
    }

    var extensions: [(jobID: String, seconds: Int)] { state.withLock { $0.extensions } }

    func cancel(jobID: String, user: String) -> DeskError? {
        state.withLock { $0.cancelsBegun += 1 }
        while state.withLock({ $0.holdCancel }) { usleep(1000) }
        state.withLock { $0.cancels.append(Cancel(jobID: jobID, user: user)) }
        return nil
    }
}
