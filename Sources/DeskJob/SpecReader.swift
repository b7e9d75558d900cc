import DeskCore
import Glibc

/// The job's instructions: the here-document the job's script feeds deskd-job's stdin.
public enum SpecReader {
    /// The spec, checked; anything else ends the job here with one sentence on stderr and exit
    /// status 2, before anything was started.
    public static func readStandardInput() -> JobSpec {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        // One byte past the limit is enough for JobSpec.decode to call it too large.
        while bytes.count <= JobSpec.maxBytes {
            let n = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                StandardError.say("could not read the job's spec on stdin: \(String(cString: strerror(errno))).")
                exit(2)
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") }) else {
            StandardError.say("there is no spec on stdin: deskd-job runs as a desktop's Slurm job, which deskd submits.")
            exit(2)
        }
        do {
            return try JobSpec.decode(bytes)
        } catch {
            StandardError.say(error.message)
            exit(2)
        }
    }
}

/// Where deskd-job speaks to a person: its stderr (under Slurm the job's --error, /dev/null as
/// deskd submits it, so what deskd must know also goes on the report line).
enum StandardError {
    static func say(_ sentence: String) {
        let line = Array("deskd-job: \(sentence)\n".utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
