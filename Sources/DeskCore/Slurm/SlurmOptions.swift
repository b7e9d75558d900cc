/// `deskctl start --slurm`: the desktop as a Slurm job, with what the site's defaults
/// (deskd.toml's [slurm]) leave open to the user. Each value is checked here, before it is ever
/// an argument of sbatch: names of Slurm's own kinds, nothing a shell or sbatch could read as
/// another option.
public struct SlurmOptions: Codable, Sendable, Equatable {
    public var partition: String?
    /// `--time`, as Slurm writes it.
    public var time: String?
    /// `--gres`, e.g. `gpu:1` or `gpu:a100:2`.
    public var gres: String?
    public var account: String?
    /// `--cpus-per-task`: the cores the desktop's job asks for.
    public var cores: Int?

    public init(partition: String? = nil, time: String? = nil, gres: String? = nil, account: String? = nil, cores: Int? = nil) {
        self.partition = partition
        self.time = time
        self.gres = gres
        self.account = account
        self.cores = cores
    }

    /// The most cores deskd passes on (Slurm judges the node's own).
    public static let maxCores = 4096

    /// The GPUs `gres` asks for (`gpu:2`, `gpu:a100:2`); nil when it asks for none.
    public var gpuCount: Int? {
        guard let gres else { return nil }
        let count = SlurmPartition.gpuCount(gres: gres)
        return count > 0 ? count : nil
    }

    /// The same options, each checked; the first wrong one is the sentence.
    public func checked() throws(DeskError) -> SlurmOptions {
        if let partition { try Self.checkName(partition, what: "partition", flag: "--partition") }
        if let account { try Self.checkName(account, what: "account", flag: "--account") }
        if let time, SlurmTime(slurm: time)?.seconds == nil {
            throw DeskError(.badRequest, "'\(time)' is not a time limit deskd takes; give one as Slurm writes it, such as 30, 4:00:00 or 1-12:00:00 (--time).")
        }
        if let cores, !(1...Self.maxCores).contains(cores) {
            throw DeskError(.badRequest, "a desktop asks for 1 to \(Self.maxCores) cores, not \(cores) (--cores).")
        }
        if let gres {
            let allowed = gres.utf8.allSatisfy { Self.isNameByte($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ",") }
            guard !gres.isEmpty, gres.utf8.count <= 128, allowed, gres.utf8.first.map(Self.isLetter) ?? false else {
                throw DeskError(.badRequest, "'\(gres)' is not a generic resource deskd takes; give one as Slurm writes it, such as gpu:1 or gpu:a100:2 (--gres).")
            }
        }
        return self
    }

    public static func checkName(_ text: String, what: String, flag: String) throws(DeskError) {
        guard !text.isEmpty, text.utf8.count <= 64, text.utf8.allSatisfy(isNameByte), text.utf8.first.map(isLetter) ?? false else {
            throw DeskError(.badRequest, "'\(text)' is not a Slurm \(what) name deskd takes: letters, digits, '-', '_' and '.', starting with a letter (\(flag)).")
        }
    }

    static func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
    static func isNameByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ".")
    }
}
