import DeskCore
import DeskHost
import DeskLinux
import FoundationEssentials
import Glibc

/// The per-session log directories under `<state>/logs/<uid>/<id>`, root's alone (0700).
///
/// deskd-session writes each process's output there (`server.log`, `desktop.log`, capped, with one
/// `.1` generation) and how it ended (`server.exit`, `desktop.exit`); deskd adds `session.json`,
/// a `SessionSummary`, when the session starts and again when it ends. Each owner keeps the
/// directories of their last `keep` ended sessions, so no user can push another's logs out by
/// starting and ending desktops, and the disk used is at most users × `keep` × 2 × 2 × `log_bytes`.
///
/// Every method blocks on the file system; sessions and the service call them off their actors.
struct SessionLogArchive: Sendable {
    let directory: String

    static let summaryName = "session.json"
    /// A directory with no end recorded and no live session is left this long before it counts as
    /// ended: it may be a start in flight (deskd writes the summary just after making it).
    static let unfinishedGrace: TimeInterval = 3600

    /// Where a new session of `uid` keeps its logs; the owner's directory is made if missing.
    func newPath(uid: UInt32, id: String) -> String? {
        let owner = directory + "/\(uid)"
        guard mkdir(owner, 0o700) == 0 || errno == EEXIST else { return nil }
        let path = owner + "/" + id
        guard mkdir(path, 0o700) == 0 else { return nil }
        return path
    }

    /// The directory of session `id`, whoever owns it (or where the first deskd of this
    /// release kept it, directly under the logs).
    func path(of id: String) -> String? {
        guard SessionSummary.isSessionID(id) else { return nil }
        for owner in owners() {
            let path = directory + "/\(owner)/" + id
            if access(path, F_OK) == 0 { return path }
        }
        let flat = directory + "/" + id
        return access(flat, F_OK) == 0 ? flat : nil
    }

    func save(_ summary: SessionSummary, in path: String) {
        try? RootFile.replace(path + "/" + Self.summaryName, with: JSONEncoder.desk.encode(summary))
    }

    func summary(in path: String) -> SessionSummary? {
        guard case .contents(let bytes, _, _) = UntrustedFile.read(path + "/" + Self.summaryName, limit: 64 << 10) else { return nil }
        return try? JSONDecoder.desk.decode(SessionSummary.self, from: Data(bytes))
    }

    func summary(of id: String) -> SessionSummary? {
        path(of: id).flatMap(summary(in:))
    }

    /// Adds a line of deskd's own to a process's log, where its owner reads what happened to
    /// it (`deskctl logs`): the directory is root's, so the line is appended, never followed.
    func note(_ line: String, to role: ProcessLog.Role, in path: String) {
        let fd = open(Self.file(of: role, ".log", in: path), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array("deskd: \(line)\n".utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// A process's file (`server.log`, `desktop.exit`): under the name a deskd-session from
    /// before `server` was the role's word gave it (`xvnc.log`), where only that one is there.
    /// Such a session's deskd-session outlives an upgrade of deskd and writes there to its end.
    static func file(of role: ProcessLog.Role, _ suffix: String, in path: String) -> String {
        let current = path + "/" + role.rawValue + suffix
        guard role == .server, access(current, F_OK) != 0 else { return current }
        let former = path + "/" + ProcessLog.Role.formerServerWord + suffix
        return access(former, F_OK) == 0 ? former : current
    }

    /// How each process ended, as deskd-session wrote it.
    func exits(in path: String) -> [ProcessLog.Role: String] {
        var exits: [ProcessLog.Role: String] = [:]
        for role in ProcessLog.Role.allCases {
            if case .contents(let bytes, _, _) = UntrustedFile.read(Self.file(of: role, ".exit", in: path), limit: 256) {
                let text = String(decoding: bytes, as: UTF8.self).trimming()
                if !text.isEmpty { exits[role] = text }
            }
        }
        return exits
    }

    /// Marks the session in `path` ended and returns how its processes ended. A directory without
    /// a summary (a start that failed before writing one) gets one from `fallback`.
    @discardableResult
    func end(in path: String, _ fallback: SessionSummary, reason: String, at time: Date) -> [ProcessLog.Role: String] {
        var summary = self.summary(in: path) ?? fallback
        summary.endedAt = time
        summary.endReason = reason
        save(summary, in: path)
        return exits(in: path)
    }

    /// The session on `display` that ended last. (A running one the caller finds among its live
    /// sessions before asking this.) Reads every kept summary: a rare request, off the actor.
    func newest(on display: Display) -> (summary: SessionSummary, path: String)? {
        var best: (summary: SessionSummary, path: String, changed: timespec)?
        for owner in owners() {
            for (path, changed) in byChange(in: directory + "/\(owner)") {
                guard let summary = summary(in: path), summary.display == display else { continue }
                if best == nil || Self.earlier(best!.changed, changed) { best = (summary, path, changed) }
            }
        }
        return best.map { ($0.summary, $0.path) }
    }

    /// The last `lines` lines of each process's output (reaching into `.log.1` when the current
    /// file has fewer), each cut to `SessionLogs.maxLineBytes`, all of them within `bytes`.
    func logs(of summary: SessionSummary, in path: String, lines: Int, bytes: Int) -> SessionLogs {
        let exits = self.exits(in: path)
        var budget = bytes / ProcessLog.Role.allCases.count
        let processes = ProcessLog.Role.allCases.map { role in
            let base = Self.file(of: role, ".log", in: path)
            var collected: [String] = []
            var more = false
            for file in [base, base + ".1"] where !more {
                BackwardLines.each(in: file, longest: SessionLogs.maxLineBytes) { line, cut in
                    // Control bytes cost six in the JSON reply: count them so, to bound what is sent.
                    let cost = line.reduce(1) { $0 + ($1 < 0x20 || $1 == 0x7F ? 6 : 1) }
                    guard collected.count < lines, cost <= budget else {
                        more = true
                        return false
                    }
                    budget -= cost
                    var bytes = line
                    if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
                    collected.append(String(decoding: bytes, as: UTF8.self) + (cut ? " [line cut]" : ""))
                    return true
                }
            }
            return ProcessLog(role: role, exit: exits[role], lines: collected.reversed(), truncated: more)
        }
        return SessionLogs(session: summary, processes: processes)
    }

    /// Removes, for `owner`, the directories of ended sessions beyond the newest `keep`, never one
    /// in `live`, nor one whose end is not recorded unless it is older than `unfinishedGrace`
    /// (a start in flight is in no live set yet).
    func prune(owner: UInt32, keep: Int, live: Set<String>, now: Date = Date()) {
        let kept = byChange(in: directory + "/\(owner)").filter { path, _ in !live.contains(String(path.split(separator: "/").last ?? "")) }
        // No more than `keep` that are not live: nothing to drop, and no summary to read (each
        // end of a kill --all prunes its owner's logs; most find nothing over the limit).
        guard kept.count > keep else { return }
        let ended = kept.filter { path, changed in
            if summary(in: path)?.endedAt != nil { return true }
            return now.timeIntervalSince1970 - Double(changed.tv_sec) > Self.unfinishedGrace
        }
        for old in ended.dropLast(keep) {
            SecureTree.remove(old.path)
        }
    }

    /// Every owner's retention applied (at start-up), and the directories an earlier deskd of
    /// this release kept directly under the logs removed once ended.
    func pruneAll(keep: Int, live: Set<String>) {
        for owner in owners() { prune(owner: owner, keep: keep, live: live) }
        for (path, _) in byChange(in: directory) where !live.contains(String(path.split(separator: "/").last ?? "")) {
            if summary(in: path)?.endedAt != nil { SecureTree.remove(path) }
        }
    }

    private func owners() -> [UInt32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap { UInt32($0) }
    }

    /// The session directories in `parent`, oldest first by when their summary was last written
    /// (at the end, for an ended session), to the nanosecond: the summaries' times are whole
    /// seconds, and a kill --all ends many sessions in one. One without a summary counts by its own time.
    private func byChange(in parent: String) -> [(path: String, changed: timespec)] {
        let ids = ((try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []).filter(SessionSummary.isSessionID)
        return ids.compactMap { id -> (path: String, changed: timespec)? in
            let path = parent + "/" + id
            var info = stat()
            guard lstat(path + "/" + Self.summaryName, &info) == 0 || lstat(path, &info) == 0 else { return nil }
            return (path, info.st_mtim)
        }.sorted { Self.earlier($0.changed, $1.changed) || (!Self.earlier($1.changed, $0.changed) && $0.path < $1.path) }
    }

    private static func earlier(_ a: timespec, _ b: timespec) -> Bool {
        (a.tv_sec, a.tv_nsec) < (b.tv_sec, b.tv_nsec)
    }
}
