import Glibc

/// Finds a session's processes without a cgroup: every process of the session's user whose
/// environment carries the session's marker. A double-forked child keeps its environment,
/// so it is found even in a session of its own.
public enum ProcessSweep {
    public static let markerKey = "DESKD_SESSION"

    public static func pids(uid: uid_t, sessionID: String) -> [pid_t] {
        ProcFS.allPIDs().filter { pid in
            guard ProcFS.uid(of: pid) == uid, let environ = ProcFS.read("/proc/\(pid)/environ", limit: 1 << 20) else { return false }
            return carriesMarker(environ: environ, sessionID: sessionID)
        }
    }

    /// The processes of many sessions in one walk of /proc (a kill of two hundred would walk it
    /// two hundred times): by session id, for the sessions in `sessions`, whose users are `uids`.
    public static func pids(uids: Set<uid_t>, sessionIDs: Set<String>) -> [String: [pid_t]] {
        let prefix = Array("\(markerKey)=".utf8)
        var found: [String: [pid_t]] = [:]
        for pid in ProcFS.allPIDs() {
            guard let uid = ProcFS.uid(of: pid), uids.contains(uid), let environ = ProcFS.read("/proc/\(pid)/environ", limit: 1 << 20) else { continue }
            for entry in environ.split(separator: 0) where entry.starts(with: prefix) {
                let id = String(decoding: entry.dropFirst(prefix.count), as: UTF8.self)
                if sessionIDs.contains(id) { found[id, default: []].append(pid) }
            }
        }
        return found
    }

    /// Whether the bytes of /proc/PID/environ (NUL-separated `KEY=value` entries) hold the
    /// session's marker as one whole entry.
    static func carriesMarker(environ: [UInt8], sessionID: String) -> Bool {
        let marker = Array("\(markerKey)=\(sessionID)".utf8)
        return environ.split(separator: 0).contains { $0.elementsEqual(marker) }
    }
}
