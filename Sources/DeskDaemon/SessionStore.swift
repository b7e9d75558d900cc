import DeskCore
import DeskLinux
import Foundation
import Glibc

/// What deskd persists per session: the session and where its processes live.
struct SessionRecord: Codable, Sendable {
    var session: Session
    /// The session's cgroup, if it has one.
    var cgroup: String?
}

/// One JSON file per session under `<state>/sessions`, written atomically (temp file + rename),
/// so a daemon killed mid-write leaves the old record or the new one, never half of one.
struct SessionStore: Sendable {
    let directory: String

    func save(_ record: SessionRecord) throws {
        let data = try JSONEncoder.desk.encode(record)
        let path = url(for: record.session.display).path
        let temporary = path + ".tmp"
        // Root's own directory (0700): a fixed temporary name is safe, and rename is atomic.
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OSError("create", path: temporary) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw OSError("write", path: path)
        }
    }

    func remove(_ display: Display) {
        try? FileManager.default.removeItem(at: url(for: display))
    }

    /// Every readable record; unreadable ones are reported so the caller can log and drop them.
    func loadAll() -> (records: [SessionRecord], unreadable: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var records: [SessionRecord] = []
        var unreadable: [String] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = directory + "/" + name
            if let data = FileManager.default.contents(atPath: path),
               let record = try? JSONDecoder.desk.decode(SessionRecord.self, from: data) {
                records.append(record)
            } else {
                unreadable.append(path)
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        return (records, unreadable)
    }

    private func url(for display: Display) -> URL {
        URL(fileURLWithPath: directory).appendingPathComponent("\(display.number).json")
    }
}
