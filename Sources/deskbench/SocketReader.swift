import DeskPOSIX
import DeskClient
import DeskLinux
import Glibc

/// Buffered reads of one socket.
final class SocketReader {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 18)
    private var start = 0, end = 0

    init(fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    private func fill() throws {
        if start == end { start = 0; end = 0 }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + end, $0.count - end, 0) }
        if n < 0 && errno == EINTR { return }
        guard n > 0 else { throw StreamFailure(n == 0 ? "the relay closed the connection" : "recv: \(String(cString: strerror(errno)))") }
        end += n
    }

    func read(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            if start == end { try fill() }
            let take = min(count - out.count, end - start)
            out += buffer[start..<start + take]
            start += take
        }
        return out
    }

    func skip(_ count: Int) throws {
        var left = count
        while left > 0 {
            if start == end { try fill() }
            let take = min(left, end - start)
            start += take
            left -= take
        }
    }

    /// Up to and including the blank line that ends an HTTP head.
    func readHTTPHead() throws -> String {
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            head += try read(1)
            guard head.count < 16384 else { throw StreamFailure("an HTTP head over 16 KiB") }
        }
        return String(decoding: head, as: UTF8.self)
    }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw StreamFailure("send: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    static func connectTCP(port: Int) throws -> SocketReader {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        guard InternetSocketAddress.loopback(port: port).withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw StreamFailure("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        return SocketReader(fd: fd)
    }

    static func connectUnix(_ path: String) throws -> SocketReader {
        guard let address = UnixSocketAddress(path) else { throw StreamFailure("\(path) is too long for a Unix socket address") }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard address.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw StreamFailure("connect to \(path): \(String(cString: strerror(errno)))")
        }
        return SocketReader(fd: fd)
    }
}
