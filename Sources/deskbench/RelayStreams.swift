import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc

/// A blocking byte stream for the relay benchmark's own RFB client: Xvnc's socket straight, or
/// a WebSocket through a relay. Plain and lean on purpose: the client must not be what limits
/// the measure, so pixel data is read into one scratch buffer and dropped, never copied.
protocol RFBStream: AnyObject {
    func read(_ count: Int) throws -> [UInt8]
    /// Reads and drops `count` bytes.
    func skip(_ count: Int) throws
    func write(_ bytes: [UInt8]) throws
}

struct StreamFailure: Error, CustomStringConvertible {
    let description: String
    init(_ text: String) { description = text }
}

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

/// RFB straight from Xvnc's socket: the floor every relay adds to.
final class DirectStream: RFBStream {
    let socket: SocketReader
    init(path: String) throws { socket = try .connectUnix(path) }
    func read(_ count: Int) throws -> [UInt8] { try socket.read(count) }
    func skip(_ count: Int) throws { try socket.skip(count) }
    func write(_ bytes: [UInt8]) throws { try socket.write(bytes) }
}

/// RFB inside binary WebSocket frames, as a browser speaks it to a relay: frames to the relay
/// masked, frames from it read across their boundaries as one byte stream.
final class WebSocketStream: RFBStream {
    let socket: SocketReader
    private var frameLeft = 0

    /// Connects and upgrades `/websockify` on 127.0.0.1:`port`, with `cookie` if the relay wants one.
    init(port: Int, cookie: String?) throws {
        socket = try .connectTCP(port: port)
        var head = "GET /websockify HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: ZGVza2JlbmNoLXJlbGF5ISE=\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary\r\n"
            + "Origin: http://127.0.0.1:\(port)\r\n"
        if let cookie { head += "Cookie: deskd_gateway=\(cookie)\r\n" }
        try socket.write(Array((head + "\r\n").utf8))
        let answer = try socket.readHTTPHead()
        guard answer.hasPrefix("HTTP/1.1 101") else { throw StreamFailure("the upgrade was refused: \(answer.prefix(200))") }
    }

    func read(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            try nextFrameIfNeeded()
            let take = min(count - out.count, frameLeft)
            out += try socket.read(take)
            frameLeft -= take
        }
        return out
    }

    func skip(_ count: Int) throws {
        var left = count
        while left > 0 {
            try nextFrameIfNeeded()
            let take = min(left, frameLeft)
            try socket.skip(take)
            frameLeft -= take
            left -= take
        }
    }

    private func nextFrameIfNeeded() throws {
        while frameLeft == 0 {
            let header = try socket.read(2)
            let opcode = header[0] & 0x0F
            var length = Int(header[1] & 0x7F)
            if length == 126 {
                length = try socket.read(2).reduce(0) { $0 << 8 | Int($1) }
            } else if length == 127 {
                length = try socket.read(8).reduce(0) { $0 << 8 | Int($1) }
            }
            if header[1] & 0x80 != 0 { throw StreamFailure("the relay masked a frame") }
            switch opcode {
            case 0, 2: frameLeft = length
            case 8: throw StreamFailure("the relay closed the WebSocket")
            default: try socket.skip(length)   // ping, pong, text: not RFB
            }
        }
    }

    func write(_ bytes: [UInt8]) throws {
        var frame: [UInt8] = [0x82]
        if bytes.count < 126 {
            frame.append(0x80 | UInt8(bytes.count))
        } else {
            frame += [0x80 | 126, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)]
        }
        let mask: [UInt8] = [0x5A, 0x17, 0xC3, 0x3E]
        frame += mask
        frame += bytes.enumerated().map { $0.element ^ mask[$0.offset & 3] }
        try socket.write(frame)
    }

    /// A gateway link's token traded for the cookie its WebSocket needs, as the /open page does.
    static func exchange(token: String, port: Int) throws -> String {
        let socket = try SocketReader.connectTCP(port: port)
        try socket.write(Array(("POST /exchange HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://127.0.0.1:\(port)\r\n"
                                + "Content-Type: text/plain\r\nContent-Length: \(token.utf8.count)\r\nConnection: close\r\n\r\n" + token).utf8))
        let head = try socket.readHTTPHead()
        let line = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie: deskd_gateway=") }
        guard let line else { throw StreamFailure("the gateway gave no cookie for the link: \(head.prefix(200))") }
        return String(line.dropFirst("set-cookie: deskd_gateway=".count).prefix { $0 != ";" })
    }
}

/// The benchmark's RFB viewer: a handshake (VNC authentication with the password, or None on
/// the gateway's already authenticated stream), Raw encoding only, and whole-screen or 1×1
/// updates on request.
final class RFBBenchClient {
    let stream: any RFBStream
    private(set) var width = 0, height = 0, bytesPerPixel = 4

    init(_ stream: any RFBStream, password: String?) throws {
        self.stream = stream
        guard try stream.read(12) == Array("RFB 003.008\n".utf8) else { throw StreamFailure("not RFB 3.8") }
        try stream.write(Array("RFB 003.008\n".utf8))
        let types = try stream.read(Int(try stream.read(1)[0]))
        if let password, types.contains(2) {
            try stream.write([2])
            try stream.write(VNCAuthentication.response(challenge: try stream.read(16), password: password))
        } else if types.contains(1) {
            try stream.write([1])
        } else {
            throw StreamFailure("no security type the bench can use among \(types)")
        }
        guard try stream.read(4) == [0, 0, 0, 0] else { throw StreamFailure("authentication failed") }
        try stream.write([1])   // shared
        let initial = try stream.read(24)
        width = Int(initial[0]) << 8 | Int(initial[1])
        height = Int(initial[2]) << 8 | Int(initial[3])
        bytesPerPixel = Int(initial[4]) / 8
        let nameLength = initial[20...23].reduce(0) { $0 << 8 | Int($1) }
        try stream.skip(nameLength)
        try stream.write([2, 0, 0, 1, 0, 0, 0, 0])   // SetEncodings: Raw
    }

    /// Requests a non-incremental update of the rectangle and reads it whole; returns its bytes.
    @discardableResult
    func update(width w: Int? = nil, height h: Int? = nil) throws -> Int {
        let w = w ?? width, h = h ?? height
        try stream.write([3, 0, 0, 0, 0, 0, UInt8(w >> 8), UInt8(w & 0xFF), UInt8(h >> 8), UInt8(h & 0xFF)])
        while true {
            let type = try stream.read(1)[0]
            switch type {
            case 0:
                let header = try stream.read(3)
                var bytes = 4
                for _ in 0..<(Int(header[1]) << 8 | Int(header[2])) {
                    let rect = try stream.read(12)
                    let rw = Int(rect[4]) << 8 | Int(rect[5]), rh = Int(rect[6]) << 8 | Int(rect[7])
                    let encoding = rect[8...11].reduce(0) { $0 << 8 | Int($1) }
                    guard encoding == 0 || rw * rh == 0 else { throw StreamFailure("an encoding other than Raw: \(encoding)") }
                    let payload = encoding == 0 ? rw * rh * bytesPerPixel : 0
                    try stream.skip(payload)
                    bytes += 12 + payload
                }
                return bytes
            case 2:
                continue   // Bell
            case 3:
                let header = try stream.read(7)
                try stream.skip(header[3...6].reduce(0) { $0 << 8 | Int($1) })
            default:
                throw StreamFailure("an RFB message the bench does not know: \(type)")
            }
        }
    }
}
