import DeskCore
import DeskLinux
import Foundation
import Glibc

/// The per-session log directories under `<state>/logs`, one per session id, root's alone (0700).
///
/// deskd-session writes each process's output there (`xvnc.log`, `desktop.log`, capped, with one
/// `.1` generation) and how it ended (`xvnc.exit`, `desktop.exit`); deskd adds `session.json`,
/// a `SessionSummary`, when the session starts and again when it ends. The directories of the
/// last `keep` ended sessions stay; older ones are removed after each end, so the logs cost at
/// most `keep` × 2 × 2 × `sessions.log_bytes` of disk however many sessions a host has run.
///
/// Every method blocks on the file system; the session manager calls them off its actor.
struct SessionLogArchive: Sendable {
    let directory: String

    static let summaryName = "session.json"

    func path(of id: String) -> String {
        directory + "/" + id
    }

    func save(_ summary: SessionSummary) {
        try? RootFile.replace(path(of: summary.id) + "/" + Self.summaryName, with: JSONEncoder.desk.encode(summary))
    }

    func summary(of id: String) -> SessionSummary? {
        guard SessionSummary.isSessionID(id),
              case .contents(let bytes, _, _) = UntrustedFile.read(path(of: id) + "/" + Self.summaryName, limit: 64 << 10)
        else { return nil }
        return try? JSONDecoder.desk.decode(SessionSummary.self, from: Data(bytes))
    }

    /// How each process ended, as deskd-session wrote it.
    func exits(of id: String) -> [ProcessLog.Role: String] {
        var exits: [ProcessLog.Role: String] = [:]
        for role in ProcessLog.Role.allCases {
            if case .contents(let bytes, _, _) = UntrustedFile.read(path(of: id) + "/\(role.rawValue).exit", limit: 256) {
                let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if !text.isEmpty { exits[role] = text }
            }
        }
        return exits
    }

    /// Marks the session ended and returns how its processes ended. A directory without a
    /// summary (a start that failed before writing one) gets one from `fallback`.
    @discardableResult
    func end(_ fallback: SessionSummary, reason: String, at time: Date) -> [ProcessLog.Role: String] {
        var summary = self.summary(of: fallback.id) ?? fallback
        summary.endedAt = time
        summary.endReason = reason
        save(summary)
        return exits(of: fallback.id)
    }

    /// The session on `display` that ended last. (A running one the caller finds among its live
    /// sessions before asking this.)
    func newest(on display: Display) -> SessionSummary? {
        for (id, _) in byChange().reversed() {
            if let summary = summary(of: id), summary.display == display { return summary }
        }
        return nil
    }

    /// The last `lines` lines of each process's output (reaching into `.log.1` when the current
    /// file has fewer), each cut to `SessionLogs.maxLineBytes`.
    func logs(of summary: SessionSummary, lines: Int) -> SessionLogs {
        let exits = self.exits(of: summary.id)
        let processes = ProcessLog.Role.allCases.map { role in
            let base = path(of: summary.id) + "/\(role.rawValue).log"
            var collected: [String] = []
            var more = false
            for file in [base, base + ".1"] where !more {
                BackwardLines.each(in: file, longest: 1 << 30) { line in
                    guard collected.count < lines else {
                        more = true
                        return false
                    }
                    collected.append(Self.text(line))
                    return true
                }
            }
            return ProcessLog(role: role, exit: exits[role], lines: collected.reversed(), truncated: more)
        }
        return SessionLogs(session: summary, processes: processes)
    }

    private static func text(_ line: ArraySlice<UInt8>) -> String {
        var bytes = line.prefix(SessionLogs.maxLineBytes)
        if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
        return String(decoding: bytes, as: UTF8.self) + (line.count > SessionLogs.maxLineBytes ? " [line cut]" : "")
    }

    /// Removes the directories of ended sessions beyond the newest `keep`, never one in `live`.
    func prune(keep: Int, live: Set<String>) {
        let ended = byChange().filter { !live.contains($0.id) }
        for old in ended.dropLast(keep) {
            SecureTree.remove(path(of: old.id))
        }
    }

    /// Every session's directory, oldest first by when its summary was last written (at the end,
    /// for an ended session), to the nanosecond: the summaries' times are whole seconds, and a
    /// kill --all ends many sessions in one. A directory without a summary counts by its own time.
    private func byChange() -> [(id: String, changed: timespec)] {
        let ids = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter(SessionSummary.isSessionID)
        return ids.compactMap { id -> (id: String, changed: timespec)? in
            var info = stat()
            guard lstat(path(of: id) + "/" + Self.summaryName, &info) == 0 || lstat(path(of: id), &info) == 0 else { return nil }
            return (id, info.st_mtim)
        }.sorted { ($0.changed.tv_sec, $0.changed.tv_nsec, $0.id) < ($1.changed.tv_sec, $1.changed.tv_nsec, $1.id) }
    }
}
