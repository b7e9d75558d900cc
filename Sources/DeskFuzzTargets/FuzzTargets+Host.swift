import CDeskShims
import DeskCore
import DeskLinux
import Glibc

/// What deskd reads about the host that users write into: /proc (a process's name is its
/// own choice, spaces and ')' included), sock_diag (a socket's name is its binder's), the files
/// of a session (its owner may rewrite them), and whatever answers on a session's RFB socket
/// (its owner may run anything there).
extension FuzzTargets {
    /// /proc/PID/stat (its command name is the process's own), /proc/PID/status's Uid line,
    /// /proc/meminfo, /proc/self/statm, and the /proc/net/tcp and unix tables.
    static let procText: Target = { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        if let process = ProcFS.Process(pid: 1, stat: bytes) {
            precondition(process.pid == 1 && process.startTicks <= UInt64(Int64.max), "a stat line read as something it is not")
        }
        _ = ProcFS.uids(status: text)
        _ = ProcFS.memoryAvailableBytes(meminfo: text)
        _ = ProcFS.residentBytes(statm: text, pageSize: 4096)
        _ = ProcFS.tcpSockets(table: text)
        let paths = ProcFS.listeningUnixSocketPaths(table: text, prefixes: ["/tmp/.X11-unix/X", "@/tmp/.X11-unix/X"])
        precondition(paths.allSatisfy { $0.hasPrefix("/tmp/.X11-unix/X") || $0.hasPrefix("@/tmp/.X11-unix/X") }, "a socket outside the prefixes was taken")
    }

    /// One datagram of a sock_diag dump, read as TCP sockets and as Unix sockets (a Unix
    /// socket's name is whatever its user bound).
    static let sockDiag: Target = { bytes in
        // As a netlink datagram arrives: in a buffer aligned for its headers.
        let datagram = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
        defer { datagram.deallocate() }
        bytes.withUnsafeBytes { datagram.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        var tcp = [deskd_tcp_socket](repeating: deskd_tcp_socket(), count: 8)
        let tcpCount = deskd_tcp_sockets_in(datagram, Int32(bytes.count), 5900, 5999, &tcp, Int32(tcp.count))
        for entry in tcp.prefix(Int(max(0, min(tcpCount, 8)))) {
            precondition((5900...5999).contains(entry.local_port), "a TCP socket outside the ports asked about was taken")
        }
        var unix = [deskd_unix_socket](repeating: deskd_unix_socket(), count: 8)
        let prefix = strdup("/tmp/.X11-unix/")
        defer { free(prefix) }
        var prefixes: [UnsafePointer<CChar>?] = [UnsafePointer(prefix)]
        let unixCount = deskd_unix_sockets_in(datagram, Int32(bytes.count), &prefixes, 1, &unix, Int32(unix.count))
        for entry in unix.prefix(Int(max(0, min(unixCount, 8)))) {
            precondition(Int(entry.name_length) < MemoryLayout.size(ofValue: entry.name), "a socket's name overflows its entry")
            let name = withUnsafeBytes(of: entry.name) { Array($0.prefix(Int(entry.name_length))) }
            precondition(name.starts(with: Array("/tmp/.X11-unix/".utf8)), "a Unix socket outside the prefix was taken")
        }
    }

    /// A Wayland desktop's record of its displays (the owner's compositor writes it, so the
    /// owner may write anything there), as the teardown reads it for Xwayland's display: only a
    /// number on a DISPLAY=: line of its own is one.
    static let waylandRecord: Target = { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        guard let display = WaylandVNC.xDisplay(recordedIn: text) else { return }
        precondition((0..<65536).contains(display.number), "a display out of X's range was read: \(display)")
        precondition(text.split(separator: "\n").contains { $0.hasPrefix("DISPLAY=:") && Int($0.dropFirst(9)) == display.number },
                     "a display was read from no DISPLAY line: \(display)")
    }

    /// A session's Xauthority file, read as libXau reads it (its owner may rewrite it), and written again.
    static let xauthority: Target = { bytes in
        guard let entries = XAuthority.entries(in: bytes) else { return }
        precondition(XAuthority.fileContents(of: entries) == bytes, "an Xauthority file does not read back")
    }

    /// What answers on a session's RFB socket, as deskd's probe and the gateway's login read it:
    /// the greeting and security types, VNC authentication's challenge and result, ServerInit,
    /// and the messages before the one-pixel update (bells, cut text, the update itself).
    static let rfbServer: Target = { bytes in
        guard bytes.count <= 64 << 10 else { return }
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { fatalError("socketpair: \(errno)") }
        defer { close(ends[1]) }
        // All of the server's bytes are written before the client reads, so nothing waits: what
        // the socket pair cannot hold at once (the kernel's own limit) is no input for this target.
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(ends[1], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            guard n > 0 else {
                close(ends[0])
                return
            }
            sent += n
        }
        shutdown(ends[1], Int32(SHUT_WR))
        let client = RFBClient(connectedSocket: ends[0], timeout: .seconds(5))
        do throws(RFBClient.Failure) {
            let greeting = try client.greet()
            try client.authenticate(greeting, password: "secret")
            let server = try client.initialise()
            precondition(server.desktopName.utf8.count <= 4096 * 3 && [8, 16, 32].contains(server.bitsPerPixel), "a ServerInit read as what it cannot be")
            try client.refreshOnePixel(server)
        } catch {
            // A refusal in a sentence is the probe's answer to a server that is not Xvnc.
            precondition(!error.description.isEmpty)
        }
    }
}
