import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// deskd's log lines on stderr. Under systemd (stderr is the journal, per $JOURNAL_STREAM)
/// a line is `<priority>message key=value…`: journald takes the level from the prefix and adds
/// its own timestamp, so there is no second one. Elsewhere: an ISO 8601 time and the level.
public struct DaemonLogHandler: LogHandler {
    /// One level for every logger of the process, so a reload (SIGHUP) changes them all.
    public static let level = Mutex(Logger.Level.info)

    public var logLevel: Logger.Level {
        get { Self.level.withLock { $0 } }
        set { Self.level.withLock { $0 = newValue } }
    }
    public var metadata: Logger.Metadata = [:]
    let toJournal: Bool
    private let output: @Sendable (String) -> Void

    public init(toJournal: Bool = DaemonLogHandler.stderrIsJournal(), output: @escaping @Sendable (String) -> Void = DaemonLogHandler.writeToStderr) {
        self.toJournal = toJournal
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = self.metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.quoted("\($0.value)"))" }.joined(separator: " ")
        let message = Self.escaped("\(event.message)")
        let text = fields.isEmpty ? message : "\(message) \(fields)"
        if toJournal {
            output("<\(Self.syslogPriority(event.level))>\(text)\n")
        } else {
            output("\(Date().formatted(.iso8601)) \(event.level) \(text)\n")
        }
    }

    /// sd-daemon(3) priorities.
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Values with spaces or quotes are quoted, so `key=value` stays parseable; control
    /// characters are escaped wherever they are (`escaped`).
    static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.unicodeScalars.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || isControl($0) }) else { return value }
        return "\"" + escaped(value, quotes: true) + "\""
    }

    /// `text` with every control character written out (\n, \r, \t, \u{1b}), so no value (a
    /// user's name, a browser's text) can end a log line, rewrite it with a carriage return, or
    /// send an admin's terminal an escape sequence; with `quotes`, backslashes and quotes too.
    /// By scalar, not by Character: "\r\n" is one Character, and both of its scalars are escaped.
    static func escaped(_ text: String, quotes: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) || quotes && ($0 == "\\" || $0 == "\"") }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\" where quotes: result += "\\\\"
            case "\"" where quotes: result += "\\\""
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where isControl(scalar): result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }

    /// systemd sets JOURNAL_STREAM=<dev>:<inode> of the stream it connected stderr to.
    public static func stderrIsJournal() -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return value == "\(info.st_dev):\(info.st_ino)"
    }

    public static let writeToStderr: @Sendable (String) -> Void = { line in
        _ = line.utf8CString.withUnsafeBufferPointer { write(STDERR_FILENO, $0.baseAddress, $0.count - 1) }
    }
}
