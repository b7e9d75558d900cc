import DeskCore

/// deskd.toml's [slurm]: desktops on a cluster's compute nodes, as Slurm jobs (`start --slurm`).
/// Off unless `listen` is set: the address jobs report back to is what makes a login node one.
public struct SlurmSettings: Sendable, Equatable {
    /// Where deskd listens for jobs reporting back, an address of this host that compute nodes reach.
    public var listen: ListenAddress?
    /// deskd-job, at this path on every compute node (deskd's package installs it there).
    public var jobProgram = "/usr/libexec/deskd/deskd-job"
    /// Site defaults, each of which a start may name otherwise.
    public var partition: String?
    public var account: String?
    public var gres: String?
    public var time = "4:00:00"
    /// The longest time a desktop may ask for, over any partition's own MaxTime; nil: the partition's.
    public var maxTimeSeconds: Int?
    /// How much longer a desktop may be made in all (`deskctl extend`); 0: not at all.
    public var extendMaxSeconds = 0
    /// Cluster desktops one user may have at once (queued ones count).
    public var maxPerUser = 2
    /// Slurm warns the job this long before its time limit; the desktop shows the user a message.
    public var warnBeforeSeconds = 300
    /// How long `start --slurm` waits for the desktop to run before it answers with it queued.
    public var startWait: Duration = .seconds(30)
    /// How often deskd asks squeue after its desktops' jobs.
    public var pollInterval: Duration = .seconds(2)
    /// Where sbatch, squeue and scancel are.
    public var commandDirectory = "/usr/bin"

    public init() {}

    public var isEnabled: Bool { listen != nil }

    /// The start form's choices with the partitions Slurm has now (none when sinfo did not answer).
    func choices(partitions: [SlurmPartition]?) -> ClusterChoices {
        ClusterChoices(partitions: partitions ?? [], defaults: SlurmOptions(partition: partition, time: time, gres: gres, account: account),
                       maxTimeSeconds: maxTimeSeconds, extendMaxSeconds: extendMaxSeconds)
    }
}
