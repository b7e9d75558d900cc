import Glibc

/// Copies bytes both ways between two connected, non-blocking sockets until either side closes
/// or fails, then closes both. One thread per relay: this is the path every byte of a cluster
/// desktop's screen takes, and a whole-screen update is megabytes. It reads and writes until
/// the kernel says EAGAIN and only then polls.
///
/// Through a buffer, not splice(2): measured on the lab's machine (4K raw updates, Xvnc's Unix
/// socket to loopback TCP), splice through a pipe cost the same CPU per GB (~0.4 s, most of it
/// TCP's own) and moved no more bytes per second, for a GNU-only call Swift's Glibc hides.
///
/// RFB never half-closes a connection: the end of either direction is the end of the viewer,
/// so the other direction is not kept open for a reply that will not come.
enum ByteRelay {
    /// More than a recv from Xvnc's socket returns (a Unix socket holds what its sender's
    /// 208 KiB send buffer held): one recv takes all there is.
    static let bufferSize = 256 << 10

    /// One direction: what was read from `source` and is not yet written to `target`.
    private struct Direction {
        let source: Int32
        let target: Int32
        let buffer: UnsafeMutableRawBufferPointer
        var start = 0
        var end = 0
        var sourceClosed = false

        var pending: Int { end - start }

        /// Moves what it can without waiting; false once the connection is over (a side closed
        /// or failed, and nothing is left to deliver).
        mutating func pump() -> Bool {
            while true {
                if pending > 0 {
                    let n = send(target, buffer.baseAddress! + start, pending, Int32(MSG_NOSIGNAL))
                    if n > 0 {
                        start += n
                        if start == end { start = 0; end = 0 }
                        continue
                    }
                    if n < 0 && errno == EINTR { continue }
                    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
                }
                if sourceClosed { return false }
                let n = recv(source, buffer.baseAddress!, buffer.count, 0)
                if n > 0 {
                    end = n
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return true }
                sourceClosed = true   // EOF or an error: deliver what is held, then end
            }
        }

        /// What to poll for: the source's data when the buffer is empty, room on the target when not.
        var interest: (fd: Int32, events: Int16) {
            pending > 0 ? (target, Int16(POLLOUT)) : (source, Int16(POLLIN))
        }
    }

    static func run(_ a: Int32, _ b: Int32) {
        let forward = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        let backward = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer {
            forward.deallocate()
            backward.deallocate()
            close(a)
            close(b)
        }
        var directions = [Direction(source: a, target: b, buffer: forward), Direction(source: b, target: a, buffer: backward)]
        // Made once: a poll per piece of a screen update is too often for an array each time.
        var fds = [pollfd](repeating: pollfd(), count: directions.count)
        while true {
            for index in directions.indices {
                guard directions[index].pump() else { return }
            }
            // Each direction waits on one descriptor; both may wait on the same one (POLLIN for
            // one, POLLOUT for the other), and poll takes them as two entries.
            for index in directions.indices {
                fds[index] = pollfd(fd: directions[index].interest.fd, events: directions[index].interest.events, revents: 0)
            }
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 && errno != EINTR { return }
            // POLLHUP and POLLERR wake the loop too: the next recv or send says what they mean.
        }
    }
}
