import DeskPOSIX
import DeskCore
import DeskLinux
import FoundationEssentials
import Glibc
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The control socket: a Unix stream socket, one request per connection, each connection in its
/// own child task so a slow or broken client never holds up another.
public struct ControlServer: Service {
    let socketPath: String
    let harness: ControlHarness
    let logger: Logger
    /// A client has this long to send its request, and this long to take the reply: one that
    /// never reads cannot hold its connection slot (or the reply's buffer) for ever.
    let readDeadline: Duration = .seconds(5)
    let writeDeadline: Duration = .seconds(10)
    let connections: ConnectionGate
    /// Called once the socket accepts connections (systemd readiness, tests).
    let onListening: @Sendable () -> Void

    public init(socketPath: String, harness: ControlHarness, logger: Logger, maxConnections: Int = 128, maxConnectionsPerUser: Int = 16,
                onListening: @escaping @Sendable () -> Void = {}) {
        self.socketPath = socketPath
        self.harness = harness
        self.logger = logger
        self.connections = ConnectionGate(total: maxConnections, perUID: maxConnectionsPerUser)
        self.onListening = onListening
    }

    public func run() async throws {
        try Self.refuseIfAnotherDaemonListens(socketPath)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .bind(unixDomainSocketPath: socketPath, cleanupExistingSocketFile: true) { channel -> EventLoopFuture<(NIOAsyncChannel<ByteBuffer, ByteBuffer>, PeerCredentials)> in
                guard let provider = channel as? any SocketOptionProvider else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
                }
                return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
                    .flatMapThrowing { (cred: PeerCredentials.UCred) in
                        (try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel), PeerCredentials(cred))
                    }
            }
        // Every local user may connect; what each may do is decided per request from SO_PEERCRED.
        chmod(socketPath, 0o666)
        logger.info("listening", metadata: ["socket.path": "\(socketPath)"])
        onListening()

        // A graceful shutdown cancels the accept loop: that is how this service ends, not an error
        // (an error would make deskd exit non-zero, and systemd would count the stop as a failure).
        defer { unlink(socketPath) }
        do {
            try await runAcceptLoop(server)
        } catch is CancellationError {
            logger.debug("accept loop ended for shutdown")
        }
    }

    private func runAcceptLoop(_ server: NIOAsyncChannel<(NIOAsyncChannel<ByteBuffer, ByteBuffer>, PeerCredentials), Never>) async throws {
        try await cancelWhenGracefulShutdown {
            try await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await (connection, peer) in connections {
                        // Root is never turned away: an admin must always be able to reach a busy daemon.
                        let refusal = peer.uid == 0 ? nil : self.connections.enter(uid: peer.uid)
                        group.addTask {
                            if let refusal {
                                await refuse(connection, refusal, peer: peer)
                            } else {
                                await serve(connection, peer: peer)
                                if peer.uid != 0 { self.connections.leave(uid: peer.uid) }
                            }
                        }
                    }
                }
            }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, peer: PeerCredentials) async {
        do {
            try await connection.executeThenClose { inbound, _ in
                let reply: Response
                switch await readRequest(inbound) {
                case .success(let bytes): reply = await harness.handle(bytes, from: peer)
                case .failure(let error): reply = Response(error: error)
                }
                try await write(reply, to: connection.channel)
            }
        } catch {
            logger.debug("connection ended with an error", metadata: ["peer.uid": "\(peer.uid)", "error": "\(error)"])
        }
    }

    /// Answers without reading: the caller holds too many connections, or everyone does.
    private func refuse(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, _ error: DeskError, peer: PeerCredentials) async {
        logger.notice("connection refused", metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)", "error": "\(error.message)"]
            .merging(error.logMetadata) { $1 })
        try? await connection.executeThenClose { _, _ in
            try await write(Response(error: error), to: connection.channel)
        }
    }

    /// One reply: a JSON object and a newline, on the wire within the write deadline or the
    /// connection closed. It goes through the channel itself, not the async writer: the writer
    /// returns once it has queued the bytes, and closing then would drop whatever the socket had
    /// not yet taken (a large history reply, cut off mid-object).
    private func write(_ response: Response, to channel: any Channel) async throws {
        var data = try ResponseWire.encode(response)
        data.append(UInt8(ascii: "\n"))
        let buffer = ByteBuffer(bytes: data)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await channel.writeAndFlush(buffer).get() }
            group.addTask { [writeDeadline] in
                try await Task.sleep(for: writeDeadline)
                // Closing fails the pending write, so the task above ends too.
                try? await channel.close().get()
                throw ChannelError.outputClosed
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Reads up to the first newline (or the end), within the size cap and the read deadline.
    private func readRequest(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>) async -> Result<[UInt8], DeskError> {
        await withTaskGroup(of: Result<[UInt8], DeskError>?.self) { group in
            group.addTask {
                var bytes: [UInt8] = []
                do {
                    for try await chunk in inbound {
                        bytes += chunk.readableBytesView
                        if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) { return .success(Array(bytes[..<newline])) }
                        if bytes.count > ControlProtocol.maxRequestBytes {
                            return .failure(DeskError(.requestTooLarge, "request is larger than \(ControlProtocol.maxRequestBytes) bytes; send one JSON object per line."))
                        }
                    }
                } catch {
                    return .failure(DeskError(.badRequest, "the connection failed while reading the request."))
                }
                return .success(bytes)
            }
            group.addTask {
                try? await Task.sleep(for: readDeadline)
                return Task.isCancelled ? nil : .failure(DeskError(.badRequest, "no complete request within \(readDeadline); send one JSON object and a newline."))
            }
            let first = await group.next()!!
            group.cancelAll()
            return first
        }
    }

    /// Binding would unlink a live daemon's socket; refuse instead of stealing it.
    static func refuseIfAnotherDaemonListens(_ path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        guard let address = UnixSocketAddress(path) else { return }
        if address.withSockaddr({ connect(fd, $0, $1) }) == 0 {
            throw OSError("another deskd is already listening on", path: path, errno: EADDRINUSE)
        }
    }
}
