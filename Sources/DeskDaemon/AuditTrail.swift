import DeskCore
import Foundation
import Glibc
import Logging
import Synchronization

/// The audit trail: one JSON line per state-changing request in `<state>/audit.log`,
/// root-only (0600). Appends are single write(2)s with O_APPEND, so lines never interleave.
/// At `rotateBytes` the file moves to audit.log.1 (the previous .1 is dropped), so refused
/// requests are rate-limited per caller (`RefusalLimiter`) and every field is capped: no user
/// can flush the entries that matter out of the trail with requests that fail.
final class AuditTrail: Sendable {
    let path: String
    let rotateBytes: Int
    private let logger: Logger
    private let lock = NSLock()
    private let refusals: Mutex<RefusalLimiter>

    init(path: String, rotateBytes: Int = 16 << 20, refusalsPerMinute: Int = 30, logger: Logger) {
        self.path = path
        self.rotateBytes = rotateBytes
        self.logger = logger
        self.refusals = Mutex(RefusalLimiter(perMinute: refusalsPerMinute))
    }

    func record(_ entry: AuditEntry) {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        guard let admitted = refusals.withLock({ $0.admit(entry.capped(), now: now) }),
              var line = try? JSONEncoder.desk.encode(admitted) else { return }
        line.append(UInt8(ascii: "\n"))
        lock.withLock {
            var info = stat()
            if stat(path, &info) == 0, Int(info.st_size) + line.count > rotateBytes {
                rename(path, path + ".1")
            }
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                logger.error("cannot write the audit trail", metadata: ["audit.path": "\(path)", "error": "\(String(cString: strerror(errno)))"])
                return
            }
            defer { close(fd) }
            let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written != line.count {
                logger.error("short write to the audit trail", metadata: ["audit.path": "\(path)"])
            }
        }
    }

    /// Entries visible to `caller`, oldest first, from the rotated file and the current one.
    func entries(visibleTo caller: Caller, since: Date?, user: String?) -> [AuditEntry] {
        let decoder = JSONDecoder.desk
        var result: [AuditEntry] = []
        for file in [path + ".1", path] {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            for line in data.split(separator: UInt8(ascii: "\n")) {
                guard let entry = try? decoder.decode(AuditEntry.self, from: line), entry.isVisible(to: caller) else { continue }
                if let since, entry.time < since { continue }
                if let user, entry.user != user && entry.peerUser != user { continue }
                result.append(entry)
            }
        }
        return result
    }
}
