/// RFB straight from Xvnc's socket: the floor every relay adds to.
final class DirectStream: RFBStream {
    let socket: SocketReader
    init(path: String) throws { socket = try .connectUnix(path) }
    /// The same bytes through a bare TCP relay (socat): no WebSocket, no reading.
    init(port: Int) throws { socket = try .connectTCP(port: port) }
    func read(_ count: Int) throws -> [UInt8] { try socket.read(count) }
    func skip(_ count: Int) throws { try socket.skip(count) }
    func write(_ bytes: [UInt8]) throws { try socket.write(bytes) }
}
