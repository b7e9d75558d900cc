@preconcurrency import CVNCClient
import DeskCore
import Glibc
import Synchronization

/// A real VNC viewer connection through libvncclient: the full RFB handshake, VNC
/// authentication with a password, and the server's first framebuffer update.
///
/// A viewer nobody here wrote: the end-to-end tests and the benchmark use it to prove that a
/// session accepts its password and refuses a wrong one, and to hold a viewer connected. deskd
/// itself does not link it (its probe is `RFBClient`, which checks who serves the endpoint).
/// Used from one thread at a time (a test may hand it to another); libvncclient is not thread-safe.
public final class VNCConnection: @unchecked Sendable {
    public struct Info: Sendable, Equatable {
        public let protocolVersion: String
        public let desktopName: String
        public let width: Int
        public let height: Int
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The handshake or authentication failed (a wrong password ends here).
        case refused
        public var description: String { "the VNC server refused the connection or the password" }
    }

    private var client: UnsafeMutablePointer<rfbClient>?
    public let info: Info

    /// Any unique address works as libvncclient's client-data tag.
    nonisolated(unsafe) private static var passwordTag: UInt8 = 0

    /// Serialises `rfbInitClient` (see `init`).
    private static let handshakes = Mutex(())

    /// libvncclient logs to stderr by default; deskctl prints its own sentences instead.
    private static let quietLogging: Void = { rfbEnableClientLogging = 0 }()

    /// Connects to a session's endpoint: its Unix socket (libvncclient connects to a path that
    /// is a socket) or its TCP port on `host`.
    public convenience init(_ endpoint: RFBEndpoint?, host: String = "127.0.0.1", password: String?, timeoutSeconds: UInt32 = 5) throws(Failure) {
        switch endpoint {
        case .unixSocket(let path): try self.init(host: path, port: 0, password: password, timeoutSeconds: timeoutSeconds)
        case .tcp(let port): try self.init(host: host, port: port, password: password, timeoutSeconds: timeoutSeconds)
        case nil: throw .refused
        }
    }

    /// Connects to `host`:`port` (or to the Unix socket at path `host`) and authenticates;
    /// throws `.refused` if the server does not accept.
    public init(host: String = "127.0.0.1", port: Int, password: String?, timeoutSeconds: UInt32 = 5) throws(Failure) {
        Self.quietLogging
        guard let client = rfbGetClient(8, 3, 4) else { throw .refused }
        client.pointee.serverHost = strdup(host)
        client.pointee.serverPort = Int32(port)
        client.pointee.connectTimeout = timeoutSeconds
        client.pointee.readTimeout = timeoutSeconds
        client.pointee.canHandleNewFBSize = 0
        withUnsafeMutablePointer(to: &Self.passwordTag) { tag in
            rfbClientSetClientData(client, tag, password.map { UnsafeMutableRawPointer(strdup($0)) } ?? nil)
        }
        client.pointee.GetPassword = { client in
            // libvncclient frees what this returns, so hand it a copy.
            let stored = withUnsafeMutablePointer(to: &VNCConnection.passwordTag) { rfbClientGetClientData(client, $0) }
            return stored.map { strdup($0.assumingMemoryBound(to: CChar.self)) } ?? strdup("")
        }
        // On failure rfbInitClient frees the client itself; only the password copy is ours.
        let stored = withUnsafeMutablePointer(to: &Self.passwordTag) { rfbClientGetClientData(client, $0) }
        // One handshake at a time in the process: libvncclient's VNC authentication encrypts
        // the challenge with d3des, whose key schedule is a global; two at once (the booted
        // test's two releases) answered each other's challenges wrongly and were refused.
        let initialised = Self.handshakes.withLock { _ in rfbInitClient(client, nil, nil) }
        guard initialised != 0 else {
            free(stored)
            throw .refused
        }
        self.client = client
        self.info = Info(
            protocolVersion: "\(client.pointee.major).\(client.pointee.minor)",
            desktopName: client.pointee.desktopName.map { String(cString: $0) } ?? "",
            width: Int(client.pointee.width), height: Int(client.pointee.height)
        )
    }

    /// Asks for the whole screen and waits for the update; returns the round trip in nanoseconds.
    /// `incremental` asks only for what changed since the last (a server may then answer only
    /// once something does: wayvnc sends a new client its last captured frame, which can be
    /// older than the screen, until the screen next changes).
    @discardableResult
    public func refresh(incremental: Bool = false, timeoutMicroseconds: UInt32 = 5_000_000) -> UInt64? {
        guard let client else { return nil }
        let start = Self.now()
        guard SendFramebufferUpdateRequest(client, 0, 0, client.pointee.width, client.pointee.height, incremental ? 1 : 0) != 0 else { return nil }
        var remaining = Int64(timeoutMicroseconds)
        while remaining > 0 {
            let waited = Self.now()
            let ready = WaitForMessage(client, UInt32(remaining))
            if ready < 0 { return nil }
            if ready > 0 {
                guard HandleRFBServerMessage(client) != 0 else { return nil }
                // One message handled is the update (Xvnc sends nothing unasked here but bell/cut text).
                return Self.now() - start
            }
            remaining -= Int64((Self.now() - waited) / 1000)
        }
        return nil
    }

    /// The framebuffer as 32-bit pixels (after `refresh`).
    public var pixels: [UInt32] {
        guard let client, let buffer = client.pointee.frameBuffer else { return [] }
        let count = Int(client.pointee.width) * Int(client.pointee.height)
        return Array(UnsafeBufferPointer(start: UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt32.self), count: count))
    }

    public func close() {
        guard let client else { return }
        let stored = withUnsafeMutablePointer(to: &Self.passwordTag) { rfbClientGetClientData(client, $0) }
        free(stored)
        rfbClientCleanup(client)
        self.client = nil
    }

    deinit { close() }

    private static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
