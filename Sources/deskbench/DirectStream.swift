/// RFB straight from Xvnc's socket: the floor every relay adds to.
final class DirectStream: RFBStream {
    let socket: SocketReader
    init(path: String) throws { socket = try .connectUnix(path) }
    func read(_ count: Int) throws -> [UInt8] { try socket.read(count) }
    func skip(_ count: Int) throws { try socket.skip(count) }
    func write(_ bytes: [UInt8]) throws { try socket.write(bytes) }
}
