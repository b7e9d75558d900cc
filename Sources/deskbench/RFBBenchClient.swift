import DeskCore

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
        // The server's own format back to it (no conversion), set before any request, as noVNC
        // sets its own: the gateway's measured relay (a Wayland desktop) requires one.
        try stream.write([0, 0, 0, 0] + Array(initial[4..<20]))
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
