import DeskCore
import DeskHost
import DeskLinux

/// What admitting a start reads of the host, and nothing more: the account and group
/// databases, which programs are installed, and the memory available now. A service reads them
/// through `HostSystem`; a test of `StartAdmission` gives them as plain values.
struct AdmissionFacts: Sendable {
    var account: @Sendable (_ name: String) -> UserAccount?
    var accountOfUID: @Sendable (_ uid: UInt32) -> UserAccount?
    var groupID: @Sendable (_ name: String) -> UInt32?
    var isExecutable: @Sendable (_ path: String) -> Bool
    var isDirectory: @Sendable (_ path: String) -> Bool
    var isFile: @Sendable (_ path: String) -> Bool
    /// MemAvailable now; nil where the host does not say. Read only where limits.memory_reserve asks.
    var memoryAvailable: @Sendable () -> Int?
    /// The cluster's partitions, for a cluster start (read by the service from sinfo before
    /// admission, off its actor); nil: not known, and Slurm judges.
    var partitions: @Sendable () -> [SlurmPartition]? = { nil }

    init(account: @escaping @Sendable (String) -> UserAccount?, accountOfUID: @escaping @Sendable (UInt32) -> UserAccount?,
         groupID: @escaping @Sendable (String) -> UInt32?, isExecutable: @escaping @Sendable (String) -> Bool,
         isDirectory: @escaping @Sendable (String) -> Bool, memoryAvailable: @escaping @Sendable () -> Int?,
         // A test that does not care: every desktop's X11 session file is there.
         isFile: @escaping @Sendable (String) -> Bool = { _ in true }) {
        self.account = account
        self.accountOfUID = accountOfUID
        self.groupID = groupID
        self.isExecutable = isExecutable
        self.isDirectory = isDirectory
        self.isFile = isFile
        self.memoryAvailable = memoryAvailable
    }

    /// The facts as the host has them now.
    init(host: any HostSystem) {
        self.init(account: { host.account(named: $0) }, accountOfUID: { host.account(uid: $0) }, groupID: { host.groupID(named: $0) },
                  isExecutable: { host.isExecutable($0) }, isDirectory: { host.isDirectory($0) }, memoryAvailable: { host.memoryAvailable() },
                  isFile: { host.isFile($0) })
    }
}
