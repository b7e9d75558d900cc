/// A desktop's `sbatch`: its arguments and its script. Made on the login node, run as the user
/// (`runuser -u USER -- sbatch …`), with the script on sbatch's stdin.
public struct SlurmSubmission: Sendable, Equatable {
    /// sbatch's arguments (after the program's name).
    public var arguments: [String]
    /// The job's script: deskd-job with the spec as its stdin.
    public var script: String

    /// The job's name in squeue; the same for every desktop (nothing of the user's in it).
    public static let jobName = "deskd-desktop"
    static let specDelimiter = "DESKD_JOB_SPEC"

    /// - Parameters:
    ///   - options: the user's choices, already checked, over the site's defaults.
    ///   - warnSeconds: `--signal=B:USR1@N`: Slurm signals the job (deskd-job itself, which the
    ///     script execs) this long before the time limit.
    ///   - directory: the job's working directory (the user's home).
    public init(options: SlurmOptions, warnSeconds: Int, directory: String, jobProgram: String, spec: JobSpec) {
        var arguments = [
            "--parsable", "--job-name=\(Self.jobName)", "--nodes=1", "--ntasks=1",
            // A desktop is not requeued behind its user's back: a node's failure ends the session
            // (NODE_FAIL), and the user starts another.
            "--no-requeue",
            "--signal=B:USR1@\(warnSeconds)",
            // The job's environment is deskd-job's to make, from the account: nothing of deskd's.
            "--export=NONE",
            "--chdir=\(directory)",
            // deskd-job reports over its hop; no output file on the node for others to find.
            "--output=/dev/null", "--error=/dev/null",
        ]
        if let partition = options.partition { arguments.append("--partition=\(partition)") }
        if let time = options.time { arguments.append("--time=\(time)") }
        if let account = options.account { arguments.append("--account=\(account)") }
        if let gres = options.gres { arguments.append("--gres=\(gres)") }
        if let cores = options.cores { arguments.append("--cpus-per-task=\(cores)") }
        self.arguments = arguments
        self.script = """
            #!/bin/sh
            # A deskd desktop (session \(spec.session)): deskd-job brings it up on this node and
            # ends every process of it with the job. Its instructions are its stdin, below.
            exec '\(jobProgram)' <<'\(Self.specDelimiter)'
            \(spec.encoded())
            \(Self.specDelimiter)

            """
    }

    /// Whether `path` may be quoted into the script as it is: absolute, printable, no quote.
    public static func isUsableProgramPath(_ path: String) -> Bool {
        path.hasPrefix("/") && path.utf8.count <= 4096 && path.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "'") }
    }

    /// sbatch --parsable prints `JOBID` or `JOBID;CLUSTER`; nil for anything else.
    public static func jobID(fromParsable output: String) -> String? {
        let line = output.split(separator: "\n").first.map(String.init) ?? ""
        let id = line.split(separator: ";").first.map(String.init) ?? ""
        guard !id.isEmpty, id.utf8.count <= 20, id.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return id
    }
}
