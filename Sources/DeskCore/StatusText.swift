/// `deskctl status` for people: a few labelled lines, within 80 columns.
public enum StatusText {
    public static func render(_ status: DaemonStatus) -> String {
        let states = status.sessionsByState.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        let limits = [
            status.maxSessionsPerUser.map { "\($0) per user" },
            status.maxSessions.map { "\($0) on the host" },
        ].compactMap(\.self)
        return [
            "deskd    \(status.daemonVersion), pid \(status.pid), up \(SessionTable.compactDuration(seconds: status.uptimeSeconds))",
            "socket   \(status.socket)",
            "config   \(status.configurationFile ?? "built-in defaults (no configuration file)")",
            "sessions \(status.sessions)\(states.isEmpty ? "" : " (\(states))") for \(status.users) user\(status.users == 1 ? "" : "s")"
                + (limits.isEmpty ? "" : "; limits: \(limits.joined(separator: ", "))"),
            status.freeDisplays.map { "displays \($0) free" },
            status.memoryAvailable.map { available in
                "memory   \(ByteSize.text(available)) available"
                    + (status.memoryReserve.map { "; reserve \(ByteSize.text($0)), room for \(status.sessionsMemoryAllows ?? 0) more desktop\(status.sessionsMemoryAllows == 1 ? "" : "s")" } ?? "")
            },
        ].compactMap(\.self).joined(separator: "\n")
    }
}
