/// An IPv4 address and a TCP port deskd listens on.
public struct ListenAddress: Sendable, Equatable {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
}
