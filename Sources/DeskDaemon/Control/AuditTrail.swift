import DeskCore
import DeskLinux
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// The audit trail: one JSON line per state-changing request in `<state>/audit.log`,
/// root-only (0600). Appends are single write(2)s with O_APPEND, so lines never interleave.
/// At `rotateBytes` the file moves to audit.log.1 (the previous .1 is dropped), so entries that
/// neither started or ended a session nor issued or changed a credential are rate-limited per
/// caller (`AuditLimiter`: a local account, or a browser's client before its login) and every
/// field is capped: no one can flush the entries that matter out of the trail, or spend another
/// caller's allowance, with requests that fail or do nothing.
final class AuditTrail: Sendable {
    let path: String
    let rotateBytes: Int
    private let logger: Logger
    /// One appender at a time: the size check, the rotation and the write are one step.
    private let lock = Mutex(())
    private let limiter: Mutex<AuditLimiter>

    init(path: String, rotateBytes: Int = 16 << 20, idlePerMinute: Int = 30, logger: Logger) {
        self.path = path
        self.rotateBytes = rotateBytes
        self.logger = logger
        self.limiter = Mutex(AuditLimiter(perMinute: idlePerMinute))
    }

    /// `alwaysKept`: the request started or ended a session, or issued or changed a credential
    /// (see `AuditLimiter`). `client`: a browser's client, for an entry with no caller.
    func record(_ entry: AuditEntry, alwaysKept: Bool, client: String? = nil) {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        let entries = limiter.withLock { limiter -> [AuditEntry] in
            // Counts left out a minute ago or more are said now, before this entry.
            var entries = limiter.summaries(now: now, time: entry.time)
            if let admitted = limiter.admit(entry.capped(), alwaysKept: alwaysKept, client: client, now: now) { entries.append(admitted) }
            return entries
        }
        for entry in entries { append(entry) }
    }

    /// Writes the summaries that are due (what the rate limit left out a minute ago or more),
    /// whether or not anyone records anything: deskd's monitor calls it every second.
    func writeDueSummaries() {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        for entry in limiter.withLock({ $0.summaries(now: now, time: Date()) }) { append(entry) }
    }

    private func append(_ entry: AuditEntry) {
        guard var line = try? JSONEncoder.desk.encode(entry) else { return }
        line.append(UInt8(ascii: "\n"))
        lock.withLock { _ in
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

    /// The newest entries visible to `caller` (since `since`, about `user`), oldest first: at most
    /// `count` of them and `bytes` of their JSON. The files are read backwards from their end and
    /// the read stops as soon as the reply is full, on a thread of its own, one read per caller at
    /// a time and a few at once in all: the trail holds up to 32 MiB, and `history` in a loop must
    /// cost the daemon neither its threads nor its memory.
    func newest(visibleTo caller: Caller, since: Date?, user: String?, count: Int, bytes: Int) async throws(DeskError) -> [AuditEntry] {
        if let refusal = readers.withLock({ $0.enter(uid: caller.uid) }) { throw refusal }
        let files = [path, path + ".1"]
        let entries = await onBlockingPool {
            Self.newest(in: files, visibleTo: caller, since: since, user: user, count: count, bytes: bytes)
        }
        readers.withLock { $0.leave(uid: caller.uid) }
        return entries
    }

    /// The work of `newest`, newest file first.
    static func newest(in files: [String], visibleTo caller: Caller, since: Date?, user: String?, count: Int, bytes: Int) -> [AuditEntry] {
        let decoder = JSONDecoder.desk
        // Users see their own lines only; a byte search finds the candidates before any decoding.
        // Keys are sorted and values escaped, so `"uid":1001` cannot hide inside another field.
        let needles = caller.isAdmin ? [] : ["\"peerUID\":\(caller.uid),", "\"uid\":\(caller.uid),", "\"uid\":\(caller.uid)}"].map { Array($0.utf8) }
        var kept: [AuditEntry] = []
        var total = 0
        for file in files {
            var full = false
            BackwardLines.each(in: file) { line, cut in
                // The trail never writes a line near the limit; a cut one is not an entry.
                if cut { return true }
                guard needles.isEmpty || needles.contains(where: { line.contains($0) }),
                      let entry = try? decoder.decode(AuditEntry.self, from: Data(line)), entry.isVisible(to: caller) else { return true }
                // The trail is written in time order: the first entry older than `since` ends the read.
                if let since, entry.time < since { full = true; return false }
                if let user, entry.user != user && entry.peerUser != user { return true }
                total += line.count + 1
                guard total <= bytes, kept.count < count else { full = true; return false }
                kept.append(entry)
                return true
            }
            if full { break }
        }
        return kept.reversed()
    }

    /// Who is reading the trail now.
    private let readers = Mutex(ReadGate(reading: "history"))
}
