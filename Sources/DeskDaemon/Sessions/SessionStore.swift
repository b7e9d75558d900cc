import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc

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

    /// Every readable record; unreadable ones (a file not named after its record's id among
    /// them) are reported so the caller can log and drop them.
    func loadAll() -> (records: [SessionRecord], unreadable: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var records: [SessionRecord] = []
        var unreadable: [String] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = directory + "/" + name
            guard case .contents(let bytes, _, _) = UntrustedFile.read(path, limit: 1 << 20),
                  let record = try? JSONDecoder.desk.decode(SessionRecord.self, from: Data(bytes)),
                  SessionSummary.isSessionID(record.session.id), name == record.session.id + ".json"
            else {
                unreadable.append(path)
                unlink(path)
                continue
            }
            records.append(record)
        }
        return (records, unreadable)
    }

    private func path(for sessionID: String) -> String {
        directory + "/" + sessionID + ".json"
    }
}
