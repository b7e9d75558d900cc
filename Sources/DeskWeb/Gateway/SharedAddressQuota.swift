import DeskFrontProtocol
import Synchronization

/// The gateway's one `AddressQuota`, shared by its connections.
final class SharedAddressQuota: Sendable {
    private let quota = Mutex(AddressQuota())
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func admit(_ address: String?) -> Bool { quota.withLock { $0.admit(address, limit: limit) } }
    func release(_ address: String?) { quota.withLock { $0.release(address) } }
    var open: [String: Int] { quota.withLock { $0.open } }
}
