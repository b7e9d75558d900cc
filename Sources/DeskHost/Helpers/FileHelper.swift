import CDeskShims
import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc
import Synchronization

/// deskd-files for one file call of a portal user's: started as root, it becomes the user
/// before it opens anything (see Sources/deskd-files). deskd talks to it over a SOCK_SEQPACKET
/// pair, whose records carry the descriptors it opened; what it opened reaches deskd-web from
/// there, and deskd itself never reads or writes a byte of the user's files.
public final class FileHelper: Sendable {
    public let pid: pid_t
    private let socket: RecordSocket
    private let pidfd: Mutex<Int32>

    private init(pid: pid_t, pidfd: Int32, socket: RecordSocket) {
        self.pid = pid
        self.pidfd = Mutex(pidfd)
        self.socket = socket
    }

    deinit { end(kill: true) }

    /// deskd-files beside deskd, or in ../libexec/deskd.
    public static func locate() -> String? {
        Companion.locate("deskd-files")
    }

    /// Starts it and sends it `request`. Nothing of the request is on its command line: the
    /// names of a user's files are no one else's business (ps shows argv to everyone).
    public static func start(program: String, request: FileHelperRequest) throws(OSError) -> FileHelper {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw OSError("socketpair", path: program)
        }
        let own = RecordSocket(adopting: deskd_above_stdio(pair[0])), child = deskd_above_stdio(pair[1])
        defer { close(child) }
        // Its answer is one record, a listing of up to FileListing.byteBudget: past the default
        // send buffer (208 KiB), which a SOCK_SEQPACKET record must fit. Set while still root's.
        var room = Int32(2 * FileHelperRequest.recordLimit)
        if setsockopt(child, SOL_SOCKET, SO_SNDBUFFORCE, &room, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            // Without CAP_NET_ADMIN (a container): as far as the system's ceiling allows.
            _ = setsockopt(child, SOL_SOCKET, SO_SNDBUF, &room, socklen_t(MemoryLayout<Int32>.size))
        }
        var pidfd: Int32 = -1
        let pid = [program].withCStringArray { argv in
            ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"].withCStringArray { envp in
                program.withCString { path in
                    var spec = deskd_spawn_spec(path: path, argv: argv, envp: envp, in_fd: child, out_fd: -1, err_fd: -1,
                                                cgroup_fd: -1, umask_value: 0o077, uid: uid_t.max, gid: gid_t.max, directory: nil, death_signal: 0)
                    return deskd_spawn_process_pidfd(&spec, &pidfd)
                }
            }
        }
        guard pid > 0, pidfd >= 0 else { throw OSError("spawn", path: program) }
        let helper = FileHelper(pid: pid, pidfd: pidfd, socket: own)
        try own.send(FileWire.encode(request))
        return helper
    }

    /// Its answer, with the descriptor that came with it (the caller's to close); nil when it
    /// ended without one or said nothing by `deadline`.
    public func answer(until deadline: ContinuousClock.Instant) -> (FileAnswer, [Int32])? {
        var entry = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
        while true {
            let remaining = deadline - .now
            guard remaining > .zero else { return nil }
            let ready = poll(&entry, 1, remaining.pollMilliseconds(atMost: 60_000))
            if ready < 0 && errno == EINTR { continue }
            if ready > 0 { break }
        }
        var buffer: [UInt8] = []
        guard let received = try? socket.receive(limit: FileHelperRequest.recordLimit, using: &buffer) else { return nil }
        guard let answer = FileWire.decode(FileAnswer.self, from: received.bytes) else {
            for fd in received.descriptors { close(fd) }
            return nil
        }
        return (answer, received.descriptors)
    }

    /// An upload's bytes are all written: the helper names the file and says under which name.
    public func commit(until deadline: ContinuousClock.Instant) -> FileAnswer? {
        guard (try? socket.send(FileHelperRequest.commit)) != nil, let (answer, fds) = answer(until: deadline) else { return nil }
        for fd in fds { close(fd) }
        return answer
    }

    /// Its end: the socket closes (an upload not committed is abandoned, and the helper removes
    /// what it made), and with `kill` it is ended at once (tar writing a folder nobody reads).
    /// Reaped either way, by the exit monitor. Safe to call twice.
    public func end(kill: Bool) {
        socket.shutdown()
        let fd = pidfd.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        guard fd >= 0 else { return }
        if kill { _ = deskd_pidfd_send_signal(fd, SIGKILL) }
        ExitMonitor.reaper.reap(pidfd: fd)
    }
}

/// The helper's records: JSON, as the front socket's.
enum FileWire {
    static func encode<T: Encodable>(_ message: T) -> [UInt8] {
        (try? Array(JSONEncoder().encode(message))) ?? []
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}
