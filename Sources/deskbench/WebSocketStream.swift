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
