import DeskCore
import DeskSessionProtocol
import FoundationEssentials

/// Every parser of deskd's that another party feeds, as a function of bytes: what the fuzzer
/// (Fuzz/, scripts/fuzz) drives and what `swift test` replays from Tests/FuzzRegressions. A
/// target traps (a crash, which the fuzzer keeps) where the parser would, and where a property
/// fails: a format with an encoder must read back what it wrote.
public enum FuzzTargets {
    public typealias Target = @Sendable ([UInt8]) -> Void

    /// By name, as scripts/fuzz and the corpus directories name them.
    public static let all: [String: Target] = [
        "canary": canary,
        "control-request": controlRequest,
        "session-command": sessionCommand,
        "session-reply": sessionReply,
        "session-spec": sessionSpec,
        "squeue": squeue,
        "sinfo": sinfo,
        "job-report": jobReport,
        "job-spec": jobSpec,
        "hop-handshake": hopHandshake,
        "toml": toml,
        "vnc-password-file": vncPasswordFile,
        "time-texts": timeTexts,
        "gateway-http": gatewayHTTP,
        "rfb-client-messages": rfbClientMessages,
        "rfb-server-messages": rfbServerMessages,
        "front-request": frontRequest,
        "rfb-server": rfbServer,
        "proc-text": procText,
        "sock-diag": sockDiag,
        "xauthority": xauthority,
        "wayland-record": waylandRecord,
        "file-query": fileQuery,
        "file-records": fileRecords,
        "response-wire": responseWire,
    ]

    /// `stream` cut where `plan` says, as a socket's reads might cut it: 0 keeps it whole;
    /// otherwise pieces of 1 to `plan` bytes, their lengths drawn from a generator seeded by
    /// `plan`, so the fuzzer chooses the cut by choosing the plan. Never more than 64 pieces (a
    /// long input is cut into longer ones), so a whole connection per piece stays affordable.
    static func pieces(_ stream: ArraySlice<UInt8>, plan: UInt8) -> [ArraySlice<UInt8>] {
        guard plan > 0 else { return [stream] }
        var state = UInt32(plan) &* 2_654_435_761 | 1
        var pieces: [ArraySlice<UInt8>] = []
        var at = stream.startIndex
        while at < stream.endIndex {
            // xorshift32
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            let length = max(1 + Int(state % UInt32(plan)), stream.count / 64)
            let end = min(at + length, stream.endIndex)
            pieces.append(stream[at..<end])
            at = end
        }
        return pieces
    }

    /// Traps on a planted 4-byte value, so a fuzzer that sees no coverage fails its run instead
    /// of passing it (scripts/fuzz expects this one to crash within its budget).
    static let canary: Target = { bytes in
        if bytes.count >= 4, bytes[0] == UInt8(ascii: "R") {
            if bytes[1] == UInt8(ascii: "F") {
                if bytes[2] == UInt8(ascii: "B") {
                    if bytes[3] == UInt8(ascii: "!") { fatalError("the canary's planted value was found") }
                }
            }
        }
    }

    /// A local user's control request (the control socket, and the portal's /api/request):
    /// decoded, made a verb, and the verb's wire form decoded again into the same verb.
    static let controlRequest: Target = { bytes in
        guard let wire = try? Request.decode(bytes), let verb = try? ControlRequest(wire) else { return }
        guard let again = try? JSONEncoder.desk.encode(verb.wire) else { fatalError("a decoded request does not encode") }
        let reread = try? ControlRequest(Request.decode(Array(again)))
        precondition(reread == verb, "a request does not read back as the same verb: \(verb)")
    }

    /// deskd's commands to deskd-session, line by line as the helper reads them.
    static let sessionCommand: Target = { bytes in
        for line in lines(bytes) {
            guard let command = SessionCommand(line: line) else { continue }
            precondition(SessionCommand(line: String(decoding: command.encoded.dropLast(), as: UTF8.self)) == command, "a command does not read back")
        }
    }

    /// deskd-session's replies to deskd, line by line as deskd reads them: the sentences in them
    /// carry what PAM modules and the user's session said.
    static let sessionReply: Target = { bytes in
        for line in lines(bytes) {
            guard let reply = SessionReply(line: line) else { continue }
            precondition(SessionReply(line: reply.line) == reply, "a session reply does not read back: \(reply)")
        }
    }

    /// The input's lines, as a line reader splits them (no newline inside a line).
    static func lines(_ bytes: [UInt8]) -> [String] {
        bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The session's spec as deskd-session reads it from its pipe, and written again.
    static let sessionSpec: Target = { bytes in
        var index = 0
        guard let spec = try? SessionSpec.decode({ () -> UInt8? in
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }) else { return }
        guard let encoded = try? spec.encoded() else { return }
        var at = 0
        let again = try? SessionSpec.decode({ () -> UInt8? in
            guard at < encoded.count else { return nil }
            defer { at += 1 }
            return encoded[at]
        })
        precondition(again == spec, "a session spec does not read back")
    }

    /// squeue's output (its reasons and node lists are Slurm's, fed by users' jobs).
    static let squeue: Target = { bytes in
        for row in SqueueRow.parse(String(decoding: bytes, as: UTF8.self), clock: .utc).values {
            _ = row.job(now: Date(timeIntervalSince1970: 1_790_000_000))
        }
    }

    /// sinfo's partitions, and a start checked against them.
    static let sinfo: Target = { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        let partitions = SlurmPartition.parse(text)
        let choices = ClusterChoices(partitions: partitions, defaults: SlurmOptions(), maxTimeSeconds: 7200, extendMaxSeconds: 3600)
        let line = text.split(separator: "\n").first.map(String.init) ?? ""
        try? choices.check(SlurmOptions(partition: partitions.first?.name, time: line, gres: line, cores: bytes.count))
    }

    /// A cluster job's report line, after the hop's handshake: JSON, read and written again.
    static let jobReport: Target = { bytes in
        guard bytes.count <= JobReport.maxLineBytes, let report = try? JSONDecoder().decode(JobReport.self, from: Data(bytes)) else { return }
        _ = report.isWellFormed
        guard let again = try? JSONEncoder().encode(report) else { fatalError("a report does not encode") }
        precondition((try? JSONDecoder().decode(JobReport.self, from: again)) == report, "a job report does not read back")
    }

    /// The job's spec, as deskd-job reads it from its script.
    static let jobSpec: Target = { bytes in
        _ = try? JobSpec.decode(bytes)
    }

    /// The cluster hop's first lines, from whoever connects to a job's relay or deskd's listener.
    static let hopHandshake: Target = { bytes in
        for text in lines(bytes) {
            if let hello = HopHandshake.Hello(line: text) {
                precondition(HopHandshake.Hello(line: hello.line.dropLast()) == hello, "a hello does not read back")
            }
            if let challenge = HopHandshake.Challenge(line: text) {
                precondition(HopHandshake.Challenge(line: challenge.line.dropLast()) == challenge, "a challenge does not read back")
            }
            _ = HopHandshake.proof(line: text)
        }
    }

    /// deskd.toml (root's own file, but the parser is the one the tests feed every shape).
    static let toml: Target = { bytes in
        _ = try? TOML.parse(utf8: bytes)
    }

    /// A session's passwd file (its owner can write it): what deskd reads back, written and read again.
    static let vncPasswordFile: Target = { bytes in
        guard let password = VNCPasswordFile.decode(bytes) else { return }
        let viewOnly = VNCPasswordFile.decodeViewOnly(bytes)
        // A block that is not UTF-8 (which vncpasswd never writes, but an owner may) reads as
        // replacement characters, longer than 8 bytes: only text that is what the block held
        // must read back.
        guard !password.contains("\u{FFFD}"), password.utf8.count <= VNCPasswordFile.passwordLength else { return }
        let again = VNCPasswordFile.encode(password: password, viewOnly: viewOnly)
        precondition(VNCPasswordFile.decode(again) == password, "a password does not read back")
    }

    /// Durations and times users type (--idle, --by, --time, --since) and Slurm prints.
    static let timeTexts: Target = { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        _ = try? IdleDuration.seconds(parsing: text)
        _ = InternetTime.parse(text)
        if let time = SlurmTime(slurm: text), let seconds = time.seconds {
            precondition(SlurmTime(slurm: time.description)?.seconds == seconds, "a Slurm time does not read back: \(text)")
        }
    }
}
