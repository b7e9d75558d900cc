/// What a desktop's job tells deskd, one JSON object per line, over the `report` hop after the
/// handshake; and what deskd tells it back. Lines are short and few: a line over `maxLineBytes`
/// ends the connection.
public struct JobReport: Codable, Sendable, Equatable {
    public static let maxLineBytes = 4096

    public enum Event: String, Codable, Sendable {
        /// The desktop answers RFB: where the job relays to it (`address`:`port`), the node, the
        /// display and the Unix socket on the node (for an ssh tunnel; at most 107 bytes, as
        /// sun_path's 108 hold its terminating NUL too).
        case ready
        /// Viewers connected now (relays and ssh tunnels to the socket).
        case viewers
        /// Slurm's warning signal came: the desktop was told the time is nearly up.
        case warned
        /// The job is ending its desktop: `message` says why (the desktop logged out, Slurm's signal…).
        case ending
        /// The desktop could not start: `message` says why.
        case failed
    }

    public var event: Event
    public var node: String?
    public var address: String?
    public var port: Int?
    public var display: Int?
    public var socket: String?
    public var viewers: Int?
    public var message: String?

    public init(event: Event, node: String? = nil, address: String? = nil, port: Int? = nil, display: Int? = nil, socket: String? = nil,
                viewers: Int? = nil, message: String? = nil) {
        self.event = event
        self.node = node
        self.address = address
        self.port = port
        self.display = display
        self.socket = socket
        self.viewers = viewers
        self.message = message
    }

    /// Whether the fields an event needs are there and in range (a report comes from a process the
    /// user controls: it is checked like any other request).
    public var isWellFormed: Bool {
        switch event {
        case .ready:
            guard let node, let address, let port, let display else { return false }
            return !node.isEmpty && node.utf8.count <= 255 && !address.isEmpty && address.utf8.count <= 64 && (1...65535).contains(port)
                && (0...65535).contains(display) && (socket.map { $0.hasPrefix("/") && $0.utf8.count <= 107 } ?? true)
        case .viewers: return (viewers.map { (0...100_000).contains($0) } ?? false)
        case .warned, .ending, .failed: return (message?.utf8.count ?? 0) <= 1024
        }
    }
}

/// What deskd tells a job over the `report` hop.
public struct JobCommand: Codable, Sendable, Equatable {
    public enum Verb: String, Codable, Sendable {
        /// deskd has seen the report (sent once, after `ready`).
        case accepted
        /// End the desktop and every process of the session, then the job.
        case end
    }

    public var command: Verb
    public init(_ command: Verb) { self.command = command }
}
