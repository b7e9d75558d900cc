import DeskCore
import DeskLinux
import Foundation
import Glibc

/// A browser as bytes: one TCP connection to the gateway on loopback, HTTP written by hand and
/// WebSocket frames masked by hand, so every test can also send what no browser would.
public final class RawClient {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public struct Response {
        public let status: Int
        public let headers: [(String, String)]
        public let body: [UInt8]

        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public let fd: Int32
    /// The gateway closed the connection (a read found its end).
    public private(set) var ended = false
    private var buffered: [UInt8] = []
    /// Payload bytes of binary frames not yet taken by `readRFB`.
    private var rfb: [UInt8] = []

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard InternetSocketAddress.loopback(port: port).withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw Failure(description: "connect: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// More bytes into the buffer; false at end of stream or after `timeout` milliseconds of silence.
    private func fill(timeout: Int32) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeout) == 1 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else {
            ended = true
            return false
        }
        buffered += chunk[..<n]
        return true
    }

    private func take(_ count: Int, timeout: Int32 = 5000) throws -> [UInt8] {
        while buffered.count < count {
            guard fill(timeout: timeout) else { throw Failure(description: "the gateway sent \(buffered.count) of \(count) bytes and stopped") }
        }
        defer { buffered.removeFirst(count) }
        return Array(buffered[..<count])
    }

    /// True if the gateway closes the connection within `timeout` milliseconds (whatever it
    /// sent before that is read and dropped).
    public func closes(within timeout: Int32) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout))
        while ContinuousClock.now < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) >= 0 else { return true }
            guard pfd.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return true }
        }
        return false
    }

    // MARK: HTTP

    public func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: String = "") throws -> Response {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { text += "Content-Length: \(body.utf8.count)\r\n" }
        try send(text + "\r\n" + body)
        return try readResponse()
    }

    public func readResponse() throws -> Response {
        while true {
            if let end = buffered.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: buffered[..<end.lowerBound], as: UTF8.self)
                buffered.removeFirst(end.upperBound)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "not HTTP: \(head)") }
                let headers = lines.compactMap { line -> (String, String)? in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (String(line[..<colon]), line[line.index(after: colon)...].trimming(where: { $0 == " " || $0 == "\t" }))
                }
                let length = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
                return Response(status: status, headers: headers, body: try take(length))
            }
            guard fill(timeout: 5000) else { throw Failure(description: "no HTTP response (got \(buffered.count) bytes)") }
        }
    }

    // MARK: WebSocket

    /// Sends a WebSocket handshake for /websockify and reads the answer.
    public func upgrade(origin: String? = "http://127.0.0.1", cookie: String?, target: String = "/websockify", protocols: String? = nil) throws -> Response {
        var headers: [(String, String)] = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                                           ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]
        if let origin { headers.append(("Origin", origin)) }
        if let cookie { headers.append(("Cookie", "other=1; deskd_gateway=\(cookie)")) }
        if let protocols { headers.append(("Sec-WebSocket-Protocol", protocols)) }
        return try request("GET", target, headers: headers)
    }

    /// One frame as a browser sends it: masked.
    public func sendFrame(opcode: UInt8 = 2, _ payload: [UInt8], masked: Bool = true, fin: Bool = true) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let mask: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: frame.append(mask | UInt8(payload.count))
        case ..<65536: frame += [mask | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: frame += [mask | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        if masked {
            let key: [UInt8] = [0x12, 0x34, 0x56, 0x78]
            frame += key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
        } else {
            frame += payload
        }
        try send(frame)
    }

    /// The next frame from the gateway: its opcode and payload.
    public func readFrame(timeout: Int32 = 5000) throws -> (opcode: UInt8, payload: [UInt8]) {
        let head = try take(2, timeout: timeout)
        var length = Int(head[1] & 0x7F)
        if length == 126 { length = try take(2).reduce(0) { $0 << 8 | Int($1) } }
        else if length == 127 { length = try take(8).reduce(0) { $0 << 8 | Int($1) } }
        guard head[1] & 0x80 == 0 else { throw Failure(description: "the gateway masked a frame") }
        return (head[0] & 0x0F, try take(length, timeout: timeout))
    }

    /// `count` bytes of the RFB stream, across however many binary frames carry them. A ping
    /// from the gateway is answered as a browser answers it, and a pong passed over.
    public func readRFB(_ count: Int, timeout: Int32 = 5000) throws -> [UInt8] {
        while rfb.count < count {
            let frame = try readFrame(timeout: timeout)
            switch frame.opcode {
            case 2: rfb += frame.payload
            case 9: try sendFrame(opcode: 10, frame.payload)
            case 10: continue
            default: throw Failure(description: "a frame of opcode \(frame.opcode) where RFB was expected: \(frame.payload.prefix(32))")
            }
        }
        defer { rfb.removeFirst(count) }
        return Array(rfb[..<count])
    }
}
