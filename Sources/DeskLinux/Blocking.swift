import Foundation

/// Runs blocking work (a libvncclient handshake can wait seconds on a stopped server) on a
/// thread of its own, so it never occupies one of the few threads of Swift's cooperative pool.
public func onDedicatedThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.name = "deskd-blocking"
        thread.start()
    }
}
