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

    /// Whether the bytes of /proc/PID/environ (NUL-separated `KEY=value` entries) hold the
    /// session's marker as one whole entry.
    static func carriesMarker(environ: [UInt8], sessionID: String) -> Bool {
        let marker = Array("\(markerKey)=\(sessionID)".utf8)
        return environ.split(separator: 0).contains { $0.elementsEqual(marker) }
    }
}
