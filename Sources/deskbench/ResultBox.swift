import DeskClient
import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc

/// Sessions collected from concurrent starts.
final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [Session] = []
    func add(_ result: (session: Session, seconds: Double)?) {
        guard let result else { return }
        lock.withLock { collected.append(result.session) }
    }
    var sessions: [Session] { lock.withLock { collected } }
}
