import DeskCluster
import DeskCore
import DeskLinux
import Glibc
import Synchronization

/// The TCP listener the login node's gateway reaches the desktop through. Anyone who can reach
/// the node can connect, so a connection gets nothing, not a byte of RFB, until it has proven it
/// holds this session's key (`HopAuthenticator`, role `relay`); then it is joined to Xvnc's Unix
/// socket, checked to be this job's Xvnc, and VNC authentication follows end to end.
final class RelayListener: Sendable {
    let fd: Int32
    /// The address it is bound to (the one the login node reaches this node at) and its port.
    let address: String
    let port: Int

    /// Connections at once, handshakes included: enough for a desktop's viewers, and a bound on
    /// the threads someone without the key can make the job hold (each for 5 s at most).
    static let concurrencyLimit = 32
    static let handshakeTime: Duration = .seconds(5)

    private init(fd: Int32, address: String, port: Int) {
        self.fd = fd
        self.address = address
        self.port = port
    }

    /// Listens on `address`, a port of the kernel's choosing.
    static func open(address: String) throws(JobFailure) -> RelayListener {
        guard let bindAddress = InternetSocketAddress(host: address, port: 0) else {
            throw JobFailure("\(address) is not an IPv4 address to listen on.")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw JobFailure("could not make the relay's socket: \(String(cString: strerror(errno))).") }
        guard bindAddress.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 64) == 0, let port = InternetSocketAddress.boundPort(of: fd) else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw JobFailure("could not listen for the gateway's relays on \(address): \(reason).")
        }
        return RelayListener(fd: fd, address: address, port: port)
    }

    /// Accepts relays on a thread of its own from now on, each relay on a thread of its own.
    func start(session: String, key: [UInt8], socketPath: String, xvnc: pid_t, board: RelayBoard, events: EventQueue) -> Bool {
        DetachedThread.start(name: "deskd-job-accept") { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    // EINVAL: `stop` shut the listener down; the job is ending.
                    if errno == EINVAL || errno == EBADF { return }
                    // Out of descriptors or memory for now: wait rather than spin.
                    usleep(100_000)
                    continue
                }
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                guard board.admit() else {
                    close(connection)
                    continue
                }
                let started = DetachedThread.start(name: "deskd-job-relay") {
                    Self.serve(connection, session: session, key: key, socketPath: socketPath, xvnc: xvnc, board: board, events: events)
                    board.release()
                }
                if !started {
                    close(connection)
                    board.release()
                }
            }
        }
    }

    /// No new relays: the job is ending. Relays in progress end with Xvnc.
    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    private static func serve(_ connection: Int32, session: String, key: [UInt8], socketPath: String, xvnc: pid_t,
                              board: RelayBoard, events: EventQueue) {
        do {
            _ = try HopAuthenticator.server(fd: connection, deadline: .now + handshakeTime) { hello in
                hello.session == session && hello.role == .relay ? key : nil
            }
        } catch {
            close(connection)
            return
        }
        // Xvnc's socket, and only if Xvnc itself serves it (SO_PEERCRED), as everywhere deskd
        // connects to one.
        let unix: Int32
        do {
            unix = try RFBClient.connect(.unixSocket(path: socketPath), xvnc: xvnc, timeout: .seconds(2)).duplicateSocket()
        } catch {
            StandardError.say("a relay could not reach Xvnc: \(error).")
            close(connection)
            return
        }
        var one: Int32 = 1
        // RFB is interactive: a key press is a few bytes that must not wait for more.
        setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
        _ = fcntl(unix, F_SETFL, fcntl(unix, F_GETFL) | O_NONBLOCK)
        let inode = socketInode(unix)
        board.connected(inode)
        events.post(.relaysChanged)
        ByteRelay.run(connection, unix)
        board.disconnected(inode)
        events.post(.relaysChanged)
    }

    /// The inode the kernel's socket tables know this socket by: Xvnc's end names it as its peer.
    private static func socketInode(_ fd: Int32) -> UInt64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? UInt64(info.st_ino) : 0
    }
}

/// The relays of the moment, shared by their threads and the main thread's viewer count.
final class RelayBoard: Sendable {
    private struct State {
        var inFlight = 0
        /// The job's own ends of relays joined to Xvnc, by socket inode (a relay is counted
        /// once, as a relay, and not again as a connection to the socket).
        var joined: [UInt64: Int] = [:]
    }

    private let state = Mutex(State())

    func admit() -> Bool {
        state.withLock { state in
            guard state.inFlight < RelayListener.concurrencyLimit else { return false }
            state.inFlight += 1
            return true
        }
    }

    func release() { state.withLock { $0.inFlight -= 1 } }

    func connected(_ inode: UInt64) { state.withLock { $0.joined[inode, default: 0] += 1 } }

    func disconnected(_ inode: UInt64) {
        state.withLock { state in
            state.joined[inode, default: 1] -= 1
            if state.joined[inode] == 0 { state.joined[inode] = nil }
        }
    }

    /// Relays joined to Xvnc now, and their sockets' inodes.
    var joined: (count: Int, inodes: Set<UInt64>) {
        state.withLock { state in (state.joined.values.reduce(0, +), Set(state.joined.keys)) }
    }
}
