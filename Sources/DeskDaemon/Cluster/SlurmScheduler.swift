import DeskPOSIX
import DeskCore
import DeskHost
import DeskLinux

/// What deskd asks of Slurm: submit a desktop's job as its user, look at its jobs, cancel one.
/// A protocol so the service's decisions run under a fake scheduler in the unit tests; the real
/// one is `SlurmCommands`. Blocking: called off every actor.
protocol SlurmScheduler: Sendable {
    /// The new job's id, or why Slurm refused it (sbatch's own words).
    func submit(_ submission: SlurmSubmission, user: String) -> Result<String, DeskError>
    /// Every job of deskd's desktops squeue still knows (it forgets a job MinJobAge after its
    /// end), by id; nil if squeue could not answer (slurmctld down), which ends nothing.
    func desktopJobs() -> [String: SqueueRow]?
    /// Cancels the job as its user; nil once Slurm took the cancel, else why not.
    func cancel(jobID: String, user: String) -> DeskError?
    /// The cluster's partitions as sinfo has them now; nil if sinfo could not answer.
    func partitions() -> [SlurmPartition]?
    /// Makes the job's time limit `seconds` longer (as Slurm's admin: a user may only shorten
    /// their own); nil once Slurm took it, else why not, and whether Slurm may have taken it
    /// all the same (scontrol did not answer in time).
    func extend(jobID: String, bySeconds seconds: Int) -> (error: DeskError, mayHaveApplied: Bool)?
}

/// Slurm's own commands, not libslurm (its ABI changes every release): sbatch and scancel run as
/// the user through runuser, so Slurm decides what the user may ask for, charges their account
/// and applies their limits; squeue runs as deskd, in the text form deskd pins (`SqueueRow`).
struct SlurmCommands: SlurmScheduler {
    let directory: String

    static let runuser = "/usr/sbin/runuser"
    /// The commands run with this and nothing of deskd's environment.
    static let environment = ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"]

    func submit(_ submission: SlurmSubmission, user: String) -> Result<String, DeskError> {
        guard let outcome = CommandRunner.run(Self.runuser, ["-u", user, "--", directory + "/sbatch"] + submission.arguments,
                                              input: Array(submission.script.utf8), environment: Self.environment, timeout: .seconds(30))
        else {
            return .failure(DeskError(.internalError, "could not run \(Self.runuser); is util-linux installed?"))
        }
        if outcome.status == 0, let id = SlurmSubmission.jobID(fromParsable: outcome.output) { return .success(id) }
        let said = Self.firstLine(outcome.errors) ?? Self.firstLine(outcome.output) ?? (outcome.timedOut ? "no answer within 30 s" : "no reason given")
        return .failure(DeskError(.slurmRefused, "Slurm did not take the desktop's job: \(said); check the partition, time, account and gres you asked for (sinfo, sacctmgr show assoc user=\(user)).",
                                  cause: .other("sbatch: \(said)")))
    }

    func desktopJobs() -> [String: SqueueRow]? {
        guard let outcome = CommandRunner.run(
            directory + "/squeue",
            ["--noheader", "--states=all", "--name=\(SlurmSubmission.jobName)", "--format=\(SqueueRow.format)"],
            environment: Self.environment, timeout: .seconds(15)), outcome.status == 0 else { return nil }
        return SqueueRow.parse(outcome.output, clock: .local)
    }

    func cancel(jobID: String, user: String) -> DeskError? {
        guard let outcome = CommandRunner.run(Self.runuser, ["-u", user, "--", directory + "/scancel", jobID],
                                              environment: Self.environment, timeout: .seconds(15)) else {
            return DeskError(.internalError, "could not run \(Self.runuser) for scancel.")
        }
        guard outcome.status != 0 else { return nil }
        let said = Self.firstLine(outcome.errors) ?? "exit status \(outcome.status.map(String.init) ?? "none")"
        return DeskError(.internalError, "scancel \(jobID) failed: \(said).")
    }

    func partitions() -> [SlurmPartition]? {
        guard let outcome = CommandRunner.run(directory + "/sinfo", ["--noheader", "--format=\(SlurmPartition.format)"],
                                              environment: Self.environment, timeout: .seconds(15)), outcome.status == 0 else { return nil }
        return SlurmPartition.parse(outcome.output)
    }

    func extend(jobID: String, bySeconds seconds: Int) -> (error: DeskError, mayHaveApplied: Bool)? {
        // Slurm's TimeLimit takes "+TIME" as an increment; only its operators (root here) may raise one.
        let increment = "+" + SlurmTime(seconds: seconds).description
        guard let outcome = CommandRunner.run(directory + "/scontrol", ["update", "JobId=\(jobID)", "TimeLimit=\(increment)"],
                                              environment: Self.environment, timeout: .seconds(15)) else {
            return (DeskError(.internalError, "could not run scontrol in \(directory)."), false)
        }
        guard outcome.status != 0 else { return nil }
        if outcome.timedOut {
            return (DeskError(.internalError, "scontrol did not answer within 15 s; job \(jobID) may or may not be longer (see deskctl list in a moment)."), true)
        }
        let said = Self.firstLine(outcome.errors) ?? Self.firstLine(outcome.output) ?? "exit status \(outcome.status.map(String.init) ?? "none")"
        return (DeskError(.slurmRefused, "Slurm did not make job \(jobID) longer: \(said).", cause: .other("scontrol update: \(said)")), false)
    }

    static func firstLine(_ text: String) -> String? {
        let line = text.split(separator: "\n").first.map { String($0).trimming() }
        guard let line, !line.isEmpty else { return nil }
        return String(line.prefix(300))
    }
}
