import FoundationEssentials

/// `deskctl status` for people: a few labelled lines, within 80 columns.
public enum StatusText {
    /// `now`: for how long until a listener's next attempt.
    public static func render(_ status: DaemonStatus, now: Date = Date()) -> String {
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
            + (status.listeners ?? []).map { "\n" + line(for: $0, now: now) }.joined()
    }

    /// "gateway  listening on 127.0.0.1:8443", or why not and when deskd tries again.
    static func line(for listener: SideListenerStatus, now: Date) -> String {
        let label = listener.name + String(repeating: " ", count: max(0, 8 - listener.name.count))
        guard !listener.listening else { return "\(label) listening on \(listener.address)" }
        // Before its first attempt has failed, it is on its way, not in trouble.
        guard listener.failedAttempts > 0 else { return "\(label) starting on \(listener.address)" }
        let retry = listener.nextAttemptAt.map { at in
            "; next try in \(SessionTable.compactDuration(seconds: max(1, Int(at.timeIntervalSince(now).rounded(.up)))))"
        } ?? ""
        return "\(label) NOT listening on \(listener.address) (\(listener.failedAttempts) failed attempt\(listener.failedAttempts == 1 ? "" : "s")\(retry))"
            + (listener.problem.map { "\n" + wrap($0, indent: 9, width: 80) } ?? "")
    }

    /// `text` in lines of at most `width` columns, each indented by `indent`, broken at spaces
    /// (a word longer than a line stays whole).
    static func wrap(_ text: String, indent: Int, width: Int) -> String {
        let margin = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && indent + line.count + 1 + word.count > width {
                lines.append(margin + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(margin + line) }
        return lines.joined(separator: "\n")
    }
}
