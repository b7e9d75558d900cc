import DeskCore
import Glibc
import Synchronization

/// Uploads deskd has admitted (deskd-files made the file, unnamed, as the user) whose bytes have
/// not come yet: the first step of an upload answers with an id, and the second brings the bytes
/// to it. So a refusal (the name taken, the size, the disk, the limits) comes back before a
/// browser sends a byte. An id is good once, for the login and desktop that asked, for a minute.
final class PendingUploads: Sendable {
    struct Upload: Sendable {
        let transfer: UInt64
        let fd: Int32
        let size: UInt64
        let folder: HomePath
        let cookie: String
        let csrf: String
        let session: String
        let expires: ContinuousClock.Instant
    }

    static let lifetime: Duration = .seconds(60)
    private let table = Mutex<[String: Upload]>([:])

    /// Keeps `upload` under a new random id.
    func add(_ upload: Upload) -> String {
        var generator = SystemRandomNumberGenerator()
        let id = (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
        table.withLock { $0[id] = upload }
        return id
    }

    /// The upload `id`, once, for the same login, page and desktop that began it.
    func take(_ id: String, cookie: String, csrf: String, session: String, now: ContinuousClock.Instant = .now) -> Upload? {
        table.withLock { table in
            guard let upload = table[id], upload.cookie == cookie, upload.csrf == csrf, upload.session == session, now < upload.expires else { return nil }
            table[id] = nil
            return upload
        }
    }

    /// Those whose minute is up, taken out: their files are closed and deskd told (the caller's).
    func expired(now: ContinuousClock.Instant = .now) -> [Upload] {
        table.withLock { table in
            let gone = table.filter { now >= $0.value.expires }
            for id in gone.keys { table[id] = nil }
            return Array(gone.values)
        }
    }

    var count: Int { table.withLock { $0.count } }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
