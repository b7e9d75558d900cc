import DeskCore
import DeskPOSIX
import Foundation
import Glibc
import Synchronization

/// A VNC server in a thread of this process, on a Unix socket, for the tests of what talks to
/// one (the RFB client, the gateway's relay): RFB 3.8 with VNC authentication, a ServerInit, a
/// small framebuffer update for each request (a flood for one 65535 pixels wide); it records
/// every byte it read, what each client sent after its ClientInit, and how authentication went.
public final class FakeVNCServer: Sendable {
    public static let desktopName = "alice's desktop (:3)"
    public static let serverInit: [UInt8] = [0x02, 0x80, 0x01, 0xE0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]
        + [0, 0, 0, UInt8(desktopName.utf8.count)] + Array(desktopName.utf8)
    public static let update: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4]
    public static let flood: [UInt8] = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 3) }

    public let path: String
    public let password: String
    private let listener: Int32
    /// Every byte the server read, from every client, the handshakes included.
    public let received = Mutex<[UInt8]>([])
    /// What each client sent after its ClientInit, by order of connection.
    public let afterClientInit = Mutex<[[UInt8]]>([])
    /// Each client's ClientInit (its shared flag).
    public let clientInits = Mutex<[UInt8]>([])
    /// Whether the last client's VNC authentication succeeded; nil before any.
    public let authenticated = Mutex<Bool?>(nil)

    public init(directory: String, password: String = "secret12") throws {
        path = directory + "/rfb.sock"
        self.password = password
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard UnixSocketAddress(path)!.withSockaddr({ bind(listener, $0, $1) }) == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        let socket = listener
        Thread { [self] in
            while true {
                let fd = accept(socket, nil, nil)
                guard fd >= 0 else { return }
                Thread { [self] in serve(fd) }.start()
            }
        }.start()
    }

    private let stopped = Mutex(false)

    /// Ends the listener (its thread holds the server until then). Once: a second close could
    /// close a descriptor the number was given to since.
    public func stop() {
        guard !stopped.withLock({ was in defer { was = true }; return was }) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// Bytes received after ClientInit by client `index`, waiting up to two seconds for at least `count`.
    public func waitForBytes(client index: Int, count: Int) -> [UInt8] {
        for _ in 0..<200 {
            let got = afterClientInit.withLock { $0.count > index ? $0[index] : [] }
            if got.count >= count { return got }
            usleep(10_000)
        }
        return afterClientInit.withLock { $0.count > index ? $0[index] : [] }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        func send(_ bytes: [UInt8]) {
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { return }
                sent += n
            }
        }
        func read(_ count: Int, timeout: Int32 = 5000) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count), got = 0
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while got < count {
                guard poll(&pfd, 1, timeout) == 1 else { return nil }
                let n = bytes[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return nil }
                got += n
            }
            received.withLock { $0 += bytes }
            return bytes
        }
        send(Array("RFB 003.008\n".utf8))
        guard read(12) != nil else { return }
        send([1, 2])
        guard read(1) == [2] else { return }
        let challenge = (0..<16).map { _ in UInt8.random(in: 0...255) }
        send(challenge)
        guard let response = read(16) else { return }
        let ok = response == VNCAuthentication.response(challenge: challenge, password: password)
        authenticated.withLock { $0 = ok }
        send(ok ? [0, 0, 0, 0] : [0, 0, 0, 1])
        guard ok, let shared = read(1) else { return }
        clientInits.withLock { $0 += shared }
        let index = afterClientInit.withLock { $0.append([]); return $0.count - 1 }
        send(Self.serverInit)
        // Whatever comes next is recorded; each FramebufferUpdateRequest's first byte gets an update.
        while let byte = read(1, timeout: 30_000) {
            afterClientInit.withLock { $0[index].append(byte[0]) }
            if byte == [3], let rest = read(9) {
                afterClientInit.withLock { $0[index] += rest }
                // A request 65535 pixels wide asks for a flood (the relay does not parse it).
                send(rest[5...6] == [0xFF, 0xFF] ? Self.flood : Self.update)
            }
        }
    }
}
