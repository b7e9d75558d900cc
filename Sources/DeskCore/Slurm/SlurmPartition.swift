/// A partition as the start form offers it and as admission checks a cluster start against it:
/// one line of `sinfo --noheader --format=FORMAT` (the text form, whose fields deskd picks).
public struct SlurmPartition: Codable, Sendable, Equatable {
    public static let format = "%P|%l|%c|%G|%a"

    public var name: String
    /// The partition Slurm uses when a job names none (sinfo marks it with `*`).
    public var isDefault: Bool
    /// Its MaxTime in seconds; nil: unlimited.
    public var maxTimeSeconds: Int?
    /// CPUs on each of its nodes (the most a desktop may ask for).
    public var cores: Int?
    /// GPUs on each of its nodes (`gpu` in its Gres; 0 without).
    public var gpus: Int
    /// Up (sinfo's `%a`); a down partition is offered but says so.
    public var isUp: Bool

    public init(name: String, isDefault: Bool = false, maxTimeSeconds: Int? = nil, cores: Int? = nil, gpus: Int = 0, isUp: Bool = true) {
        self.name = name
        self.isDefault = isDefault
        self.maxTimeSeconds = maxTimeSeconds
        self.cores = cores
        self.gpus = gpus
        self.isUp = isUp
    }

    /// Every partition in sinfo's output, once each, in sinfo's order. sinfo prints a line per
    /// group of a partition's nodes (by state and configuration): a partition offers the most
    /// any of its groups has (Slurm places the job on such a node) and is up if any group is.
    /// Lines not in the format's shape are dropped.
    public static func parse(_ output: String) -> [SlurmPartition] {
        var partitions: [SlurmPartition] = []
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5 else { continue }
            let isDefault = fields[0].hasSuffix("*")
            let name = isDefault ? String(fields[0].dropLast()) : fields[0]
            guard (try? SlurmOptions.checkName(name, what: "partition", flag: "")) != nil else { continue }
            let maxTime = fields[1] == "infinite" || fields[1] == "UNLIMITED" ? nil : SlurmTime(slurm: fields[1])?.seconds
            // %c is "8", or "4+" for a group whose nodes differ (4 at least).
            let digits = fields[2].filter(\.isNumber)
            let cores = digits.count <= 6 ? Int(digits) : nil
            let group = SlurmPartition(name: name, isDefault: isDefault, maxTimeSeconds: maxTime, cores: cores,
                                       gpus: gpuCount(gres: fields[3]), isUp: fields[4] == "up")
            guard let index = partitions.firstIndex(where: { $0.name == name }) else {
                partitions.append(group)
                continue
            }
            var merged = partitions[index]
            merged.cores = [merged.cores, group.cores].compactMap { $0 }.max()
            merged.gpus = max(merged.gpus, group.gpus)
            merged.isUp = merged.isUp || group.isUp
            partitions[index] = merged
        }
        return partitions
    }

    /// GPUs in a Gres list such as `gpu:2`, `gpu:a100:4(S:0-1)`, `gpu:a100` (one) or `gpu:1,mps:100`; 0 for `(null)`.
    /// At most `maxGPUs`: a user writes `--gres`, and no sum of theirs may overflow in root.
    static func gpuCount(gres: String) -> Int {
        let total = gres.split(separator: ",").reduce(0) { total, item in
            let parts = item.split(separator: "(").first.map { $0.split(separator: ":") } ?? []
            guard parts.first == "gpu", let last = parts.last else { return total }
            // "gpu" and "gpu:a100" ask for one, as Slurm reads them.
            guard parts.count > 1, !last.isEmpty, last.allSatisfy({ $0.isASCII && $0.isNumber }) else { return min(total + 1, maxGPUs) }
            // Seven digits and more are more than any node has: held at the most, never parsed into an overflow.
            let count = last.count <= 6 ? Int(last) ?? maxGPUs : maxGPUs
            return min(total + count, maxGPUs)
        }
        return min(total, maxGPUs)
    }

    /// More GPUs than any node has; what a count is held to.
    public static let maxGPUs = 1_000_000
}

/// What the start form offers for a cluster desktop (`desktops`' `cluster`): the partitions as
/// Slurm has them now, the site's defaults, and the site's own limits.
public struct ClusterChoices: Codable, Sendable, Equatable {
    public var partitions: [SlurmPartition]
    /// What a start that names nothing gets ([slurm] partition, time, account, gres).
    public var defaults: SlurmOptions
    /// The longest time the site lets a desktop ask for ([slurm] max_time); nil: the partition's own.
    public var maxTimeSeconds: Int?
    /// How much longer a running desktop may be made, in all ([slurm] extend_max); 0: no Extend.
    public var extendMaxSeconds: Int

    public init(partitions: [SlurmPartition], defaults: SlurmOptions, maxTimeSeconds: Int?, extendMaxSeconds: Int) {
        self.partitions = partitions
        self.defaults = defaults
        self.maxTimeSeconds = maxTimeSeconds
        self.extendMaxSeconds = extendMaxSeconds
    }

    /// Refuses, in one sentence, what Slurm or the site would refuse of `options` (already merged
    /// with the defaults): a partition that is not there, a time over its MaxTime or the site's,
    /// more cores or GPUs than its nodes have. With no partitions known (sinfo did not answer),
    /// only the site's own limit is checked and Slurm judges the rest.
    public func check(_ options: SlurmOptions) throws(DeskError) {
        let seconds = options.time.flatMap { SlurmTime(slurm: $0)?.seconds }
        if let seconds, let site = maxTimeSeconds, seconds > site {
            throw DeskError(.badRequest, "this site lets a desktop ask for \(SlurmTime(seconds: site).description) at most ([slurm] max_time), not \(SlurmTime(seconds: seconds).description); ask for less (--time).")
        }
        guard !partitions.isEmpty else { return }
        let partition: SlurmPartition
        if let name = options.partition {
            guard let named = partitions.first(where: { $0.name == name }) else {
                throw DeskError(.badRequest, "the cluster has no partition '\(name)'; choose one of \(partitions.map(\.name).joined(separator: ", ")) (--partition).")
            }
            partition = named
        } else if let fallback = partitions.first(where: \.isDefault) {
            partition = fallback
        } else {
            return
        }
        if let seconds, let most = partition.maxTimeSeconds, seconds > most {
            throw DeskError(.badRequest, "partition \(partition.name) lets a job run \(SlurmTime(seconds: most).description) at most, not \(SlurmTime(seconds: seconds).description); ask for less (--time) or choose another partition.")
        }
        if let cores = options.cores, let most = partition.cores, cores > most {
            throw DeskError(.badRequest, "the nodes of partition \(partition.name) have \(most) cores, so a desktop may ask for \(most) at most, not \(cores) (--cores).")
        }
        if let gpus = options.gpuCount, gpus > partition.gpus {
            throw DeskError(.badRequest, partition.gpus == 0
                ? "the nodes of partition \(partition.name) have no GPU; leave out --gres gpu, or choose a partition with GPUs."
                : "the nodes of partition \(partition.name) have \(partition.gpus) GPUs, so a desktop may ask for \(partition.gpus) at most, not \(gpus) (--gres).")
        }
    }
}
