import DeskCore
import DeskLinux
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// The audit trail: one JSON line per state-changing request in `<state>/audit.log`,
/// root-only (0600). Appends are single write(2)s with O_APPEND, so lines never interleave.
/// At `rotateBytes` the file moves to audit.log.1 (the previous .1 is dropped), so requests that
/// started or ended no session are rate-limited per caller (`AuditLimiter`) and every field is
/// capped: no user can flush the entries that matter out of the trail with requests that fail
/// or do nothing.
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

    /// `changedSessions`: the request started or ended at least one session (see `AuditLimiter`).
    func record(_ entry: AuditEntry, changedSessions: Bool) {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        guard let admitted = limiter.withLock({ $0.admit(entry.capped(), changedSessions: changedSessions, now: now) }),
              var line = try? JSONEncoder.desk.encode(admitted) else { return }
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
        let entries = await onDedicatedThread {
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

/// One read (of the history, of a session's logs) per caller at a time, and `total` at once in
/// all: each read runs on a thread of its own until done, whether or not the caller still waits.
struct ReadGate {
    /// What is read, for the refusals: "history", "logs".
    let reading: String
    private var readers: Set<UInt32> = []
    let total = 4

    init(reading: String) {
        self.reading = reading
    }

    mutating func enter(uid: UInt32) -> DeskError? {
        if readers.contains(uid) {
            return DeskError(.limitReached, "a \(reading) request of yours is still being read; wait for it to finish.")
        }
        if readers.count >= total {
            return DeskError(.limitReached, "deskd is serving \(readers.count) \(reading) requests, its limit; try again in a few seconds.")
        }
        readers.insert(uid)
        return nil
    }

    mutating func leave(uid: UInt32) {
        readers.remove(uid)
    }
}

/// The lines of a file from its last to its first, read in chunks from the end, so a reader that
/// wants only the newest lines of a large file reads only those. Each byte is scanned once and
/// at most `longest` bytes of a line are held, however long the line (a log may be one 8 MiB
/// line without a newline): the cost is linear in what is read.
enum BackwardLines {
    /// Calls `body` with each non-empty line, last first, until it returns false: a line longer
    /// than `longest` comes as its first `longest` bytes with `cut` set.
    static func each(in path: String, chunk: Int = 64 << 10, longest: Int = 1 << 20,
                     _ body: (_ line: ArraySlice<UInt8>, _ cut: Bool) -> Bool) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return }
        var end = Int(info.st_size)
        // The first bytes (up to `longest`) of the line that continues after this chunk, and its full length.
        var pending: [UInt8] = []
        var pendingLength = 0
        var buffer = [UInt8](repeating: 0, count: chunk)
        while end > 0 {
            let start = max(0, end - chunk)
            let read = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, end - start, off_t(start)) }
            guard read == end - start else { return }
            let block = buffer[0..<read]
            var lineEnd = read   // where the newest line still to be delivered ends within `block`
            var index = read - 1
            while index >= 0 {
                if block[index] == UInt8(ascii: "\n") {
                    // block[index+1 ..< lineEnd] followed by `pending` (only for the first newline found) is a whole line.
                    let length = lineEnd - (index + 1) + pendingLength
                    if length > 0 {
                        var line = Array(block[(index + 1)..<min(lineEnd, index + 1 + longest)])
                        if line.count < longest { line += pending.prefix(longest - line.count) }
                        if !body(line[...], length > longest) { return }
                    }
                    pending = []
                    pendingLength = 0
                    lineEnd = index
                }
                index -= 1
            }
            // What precedes the chunk's first newline begins a line that started in an earlier chunk.
            if lineEnd > 0 {
                var joined = Array(block[0..<min(lineEnd, longest)])
                if joined.count < longest { joined += pending.prefix(longest - joined.count) }
                pending = joined
                pendingLength += lineEnd
            }
            end = start
        }
        if pendingLength > 0 { _ = body(pending[...], pendingLength > longest) }
    }
}

extension ArraySlice<UInt8> {
    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count, let first = needle.first else { return needle.isEmpty }
        var index = startIndex
        let last = endIndex - needle.count
        while index <= last {
            if self[index] == first, self[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}
