import CDeskShims
import DeskPOSIX
import Glibc

/// One end of a Unix SOCK_SEQPACKET connection: whole records, each with the descriptors sent
/// with it (SCM_RIGHTS). deskd and its web front talk over one; records keep messages whole
/// without a framing of their own, and a descriptor arrives with the message it belongs to.
public final class RecordSocket: Sendable {
    public let fd: Int32

    public init(adopting fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    /// Connects to a listening record socket at `path`.
    public static func connect(to path: String) throws(OSError) -> RecordSocket {
        guard let address = UnixSocketAddress(path) else { throw OSError("connect", path: path, errno: ENAMETOOLONG) }
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OSError("socket") }
        let connected = address.withSockaddr { pointer, length in retryingEINTR { Glibc.connect(fd, pointer, length) } }
        guard connected == 0 else {
            let error = OSError("connect", path: path)
            close(fd)
            throw error
        }
        return RecordSocket(adopting: fd)
    }

    /// A listening socket at `path` that only `owner` (and root) may connect to: mode 0600,
    /// owned by `owner`. `path` must be in a directory only root may write, which deskd's
    /// runtime directory is: a stale socket there is removed, and nothing else can be planted.
    public static func listen(at path: String, owner: uid_t, group: gid_t) throws(OSError) -> Int32 {
        guard let address = UnixSocketAddress(path) else { throw OSError("bind", path: path, errno: ENAMETOOLONG) }
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OSError("socket") }
        if unlink(path) != 0 && errno != ENOENT {
            let error = OSError("unlink", path: path)
            close(fd)
            throw error
        }
        // Created 0600 (no moment at a wider mode), then given to the front's account.
        let previous = umask(0o177)
        let bound = address.withSockaddr { Glibc.bind(fd, $0, $1) }
        umask(previous)
        var failure: OSError?
        if bound != 0 { failure = OSError("bind", path: path) }
        else if chown(path, owner, group) != 0 { failure = OSError("chown", path: path) }
        else if Glibc.listen(fd, 8) != 0 { failure = OSError("listen", path: path) }
        if let failure {
            close(fd)
            throw failure
        }
        return fd
    }

    /// The next connection on `listener`, or nil once the listener is shut down or closed.
    public static func accept(on listener: Int32) throws(OSError) -> RecordSocket? {
        while true {
            // accept4 is hidden behind _GNU_SOURCE; deskd's spawns close every descriptor in the
            // child anyway (close_range), so the moment without FD_CLOEXEC leaks nothing.
            let fd = Glibc.accept(listener, nil, nil)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                return RecordSocket(adopting: fd)
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO: continue
            case EINVAL, EBADF: return nil
            default: throw OSError("accept")
            }
        }
    }

    /// Lets one record be as large as `bytes`: a SOCK_SEQPACKET record must fit the sender's
    /// buffer (208 KiB by default). Root may go past the system's ceiling (SO_SNDBUFFORCE).
    public func allowRecords(upTo bytes: Int) {
        var size = Int32(bytes)
        if setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// The process at the other end, as the kernel saw it connect.
    public var peer: PeerCredentials? { try? PeerCredentials(socket: fd) }

    /// Sends one record with `descriptors` (which stay open here: the caller closes its copies).
    /// With `wait` false a full socket is an error (EAGAIN) rather than a wait: deskd never lets
    /// a front that stopped reading hold up one of its threads.
    public func send(_ bytes: [UInt8], descriptors: [Int32] = [], wait: Bool = true) throws(OSError) {
        let sent = bytes.withUnsafeBytes { buffer in
            descriptors.withUnsafeBufferPointer { fds in
                deskd_send_record(fd, buffer.baseAddress, buffer.count, fds.baseAddress, Int32(fds.count), wait ? 0 : 1)
            }
        }
        guard sent == bytes.count else { throw OSError("sendmsg", errno: sent < 0 ? errno : EMSGSIZE) }
    }

    /// The next record and its descriptors (close-on-exec, the caller's to close); nil at the
    /// peer's end. A record over `limit` bytes is an error (EMSGSIZE), and what came with it is closed.
    /// `buffer` is the caller's to keep between calls: it is made `limit + 1` bytes once, not per record.
    public func receive(limit: Int, using buffer: inout [UInt8]) throws(OSError) -> (bytes: [UInt8], descriptors: [Int32])? {
        if buffer.count != limit + 1 { buffer = [UInt8](repeating: 0, count: limit + 1) }
        var fds = [Int32](repeating: -1, count: Int(DESKD_MAX_PASSED_FDS))
        var count: Int32 = 0
        let received = buffer.withUnsafeMutableBytes { bytes in
            fds.withUnsafeMutableBufferPointer { deskd_receive_record(fd, bytes.baseAddress, bytes.count, $0.baseAddress, &count) }
        }
        guard received >= 0 else { throw OSError("recvmsg") }
        let descriptors = Array(fds[..<Int(count)])
        if received == 0 && descriptors.isEmpty { return nil }
        guard received <= limit else {
            for descriptor in descriptors { close(descriptor) }
            throw OSError("recvmsg", errno: EMSGSIZE)
        }
        return (Array(buffer[..<received]), descriptors)
    }

    /// Ends the connection both ways; a thread blocked in `receive` returns nil.
    public func shutdown() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
