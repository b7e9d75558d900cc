/// `deskctl desktops`' cluster part, for people: what start --slurm may ask for where.
public enum PartitionTable {
    public static func render(_ choices: ClusterChoices) -> String {
        var lines: [String] = []
        if choices.partitions.isEmpty {
            lines.append("On the cluster (start --slurm): sinfo did not answer; Slurm judges what you ask for.")
        } else {
            let rows = choices.partitions.map { partition in
                [partition.name + (partition.isDefault ? " (default)" : ""), partition.maxTimeSeconds.map { SlurmTime(seconds: $0).description } ?? "unlimited",
                 partition.cores.map(String.init) ?? "?", String(partition.gpus), partition.isUp ? "up" : "down"]
            }
            lines.append(SessionTable.align([["PARTITION", "MAX TIME", "CORES", "GPUS", "STATE"]] + rows))
        }
        var site: [String] = []
        if let most = choices.maxTimeSeconds { site.append("at most \(SlurmTime(seconds: most)) a desktop (max_time)") }
        site.append(choices.extendMaxSeconds > 0 ? "deskctl extend adds up to \(SlurmTime(seconds: choices.extendMaxSeconds)) in all" : "no extend")
        lines.append("This site: " + site.joined(separator: "; ") + ".")
        return lines.joined(separator: "\n")
    }
}
