/// A blocking byte stream for the relay benchmark's own RFB client: Xvnc's socket straight, or
/// a WebSocket through a relay. Plain and lean on purpose: the client must not be what limits
/// the measure, so pixel data is read into one scratch buffer and dropped, never copied.
protocol RFBStream: AnyObject {
    func read(_ count: Int) throws -> [UInt8]
    /// Reads and drops `count` bytes.
    func skip(_ count: Int) throws
    func write(_ bytes: [UInt8]) throws
}
