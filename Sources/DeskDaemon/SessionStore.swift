import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc

/// What deskd persists per session: the session and where its processes and files live.
struct SessionRecord: Codable, Sendable {
    var session: Session
    /// The session's cgroup, if it has one.
    var cgroup: String?
    /// The session's directory (`<runtime>/by-id/<id>`). nil in records of an older deskd,
    /// whose directories were `<runtime>/displays/<n>`.
    var directory: String?
    /// The deskd-session process holding the session's PAM login (nil in an older deskd's records).
    var helper: Int32?
    /// Its start time (/proc/PID/stat field 22), so a later process with its pid is never taken for it.
    var helperStartTicks: UInt64?
    /// Where the session's logs and exit statuses are kept (`<state>/logs/<id>`).
    var logDirectory: String?
}

/// A file in one of root's own 0700 directories, replaced whole: written to a temporary file and
/// renamed over, so a daemon killed mid-write leaves the old contents or the new, never half.
/// A fixed temporary name is safe there, and O_NOFOLLOW keeps it from following anything.
enum RootFile {
    static func replace(_ path: String, with data: Data) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OSError("create", path: temporary) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw OSError("write", path: path)
        }
    }
}

/// One JSON file per session, `<runtime>/sessions/<id>.json`, written atomically (temp file +
/// rename), so a daemon killed mid-write leaves the old record or the new one, never half of one.
/// Keyed by session id, not display: removing an ended session's record can never remove the
/// record of a newer session on the same display.
struct SessionStore: Sendable {
    let directory: String

    func save(_ record: SessionRecord) throws {
        try RootFile.replace(path(for: record.session.id), with: JSONEncoder.desk.encode(record))
    }

    func remove(sessionID: String) {
        unlink(path(for: sessionID))
    }

    /// Every readable record; unreadable ones are reported so the caller can log and drop them.
    /// A record under another name (an older deskd named them by display) is moved to its id's.
    func loadAll() -> (records: [SessionRecord], unreadable: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var records: [SessionRecord] = []
        var unreadable: [String] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = directory + "/" + name
            guard case .contents(let bytes, _, _) = UntrustedFile.read(path, limit: 1 << 20),
                  let record = try? JSONDecoder.desk.decode(SessionRecord.self, from: Data(bytes)),
                  SessionSummary.isSessionID(record.session.id)
            else {
                unreadable.append(path)
                unlink(path)
                continue
            }
            if name != record.session.id + ".json" {
                rename(path, self.path(for: record.session.id))
            }
            records.append(record)
        }
        return (records, unreadable)
    }

    private func path(for sessionID: String) -> String {
        directory + "/" + sessionID + ".json"
    }
}
