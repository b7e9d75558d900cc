import DeskPOSIX
import DeskCore
@testable import DeskLinux
import Foundation
import Glibc
import Synchronization
import Testing

/// A VNC server in a thread of this process, on a Unix socket: it speaks RFB 3.8 with VNC
/// authentication and records every byte the client sent.
final class FakeVNCServer: Sendable {
    let path: String
    let listener: Int32
    let password: String
    let received = Mutex<[UInt8]>([])
    let authenticated = Mutex<Bool?>(nil)

    init(directory: String, password: String = "secret12") throws {
        path = directory + "/rfb.sock"
        self.password = password
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard UnixSocketAddress(path)!.withSockaddr({ bind(listener, $0, $1) }) == 0, listen(listener, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        let thread = Thread { [self] in serveOne() }
        thread.start()
    }

    deinit { close(listener) }

    private func serveOne() {
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else { return }
        defer { close(fd) }
        func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        func read(_ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count), got = 0
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while got < count {
                guard poll(&pfd, 1, 2000) == 1 else { return nil }
                let n = bytes[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return nil }
                got += n
            }
            received.withLock { $0 += bytes }
            return bytes
        }
        send(Array("RFB 003.008\n".utf8))
        guard read(12) != nil else { return }
        send([1, 2])                                         // one security type: VNC authentication
        guard read(1) == [2] else { return }
        let challenge = (0..<16).map { UInt8($0 * 7) }
        send(challenge)
        guard let response = read(16) else { return }
        let ok = response == VNCAuthentication.response(challenge: challenge, password: password)
        authenticated.withLock { $0 = ok }
        send(ok ? [0, 0, 0, 0] : [0, 0, 0, 1])
        guard ok, read(1) != nil else { return }             // ClientInit
        let name = Array("alice's desktop (:3)".utf8)
        send([0x02, 0x80, 0x01, 0xE0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0] + [0, 0, 0, UInt8(name.count)] + name)
        guard read(8) != nil, read(10) != nil else { return }   // SetEncodings (raw), FramebufferUpdateRequest
        send([0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4])       // one 1x1 raw rectangle, 4 bytes
    }
}

@Suite struct RFBClientTests {
    @Test func itLogsInWithThePasswordAndGetsAnUpdate() throws {
        let scratch = try Scratch()
        let server = try FakeVNCServer(directory: scratch.path)
        let client = try RFBClient.connect(.unixSocket(path: server.path), xvnc: getpid(), timeout: .seconds(5))
        let greeting = try client.greet()
        #expect(greeting == RFBClient.Greeting(version: "RFB 003.008", securityTypes: [2]))
        try client.authenticate(greeting, password: "secret12")
        let initialised = try client.initialise()
        #expect(initialised == RFBClient.ServerInit(width: 640, height: 480, bitsPerPixel: 32, desktopName: "alice's desktop (:3)"))
        try client.refreshOnePixel(initialised)
        #expect(server.authenticated.withLock { $0 } == true)
    }

    @Test func aWrongPasswordIsRejected() throws {
        let scratch = try Scratch()
        let server = try FakeVNCServer(directory: scratch.path)
        let client = try RFBClient.connect(.unixSocket(path: server.path), xvnc: nil, timeout: .seconds(5))
        let greeting = try client.greet()
        #expect(throws: RFBClient.Failure.rejected("the server refused the password")) { try client.authenticate(greeting, password: "wrong123") }
    }

    /// The server is this test process; a client that expects another pid must hang up before
    /// it reads or sends a byte of RFB, so a squatter never gets a password response.
    @Test func aServerThatIsNotTheSessionsXvncGetsNothing() throws {
        let scratch = try Scratch()
        let server = try FakeVNCServer(directory: scratch.path)
        #expect {
            try RFBClient.connect(.unixSocket(path: server.path), xvnc: 1, timeout: .seconds(2))
        } throws: { error in
            guard case RFBClient.Failure.impostor(let what) = error else { return false }
            return what.contains("pid \(getpid())") && what.contains("not by the session's VNC server (pid 1)")
        }
        usleep(100_000)
        #expect(server.received.withLock { $0 }.isEmpty)
    }

    @Test func aSymlinkToASocketIsNotFollowed() throws {
        let scratch = try Scratch()
        let server = try FakeVNCServer(directory: scratch.path)
        let link = scratch.path + "/link.sock"
        #expect(symlink(server.path, link) == 0)
        #expect(throws: RFBClient.Failure.impostor("\(link) is a symlink")) {
            try RFBClient.connect(.unixSocket(path: link), xvnc: nil, timeout: .seconds(2))
        }
        #expect(RFBHandshake.attempt(.unixSocket(path: scratch.path + "/nothing"), timeoutMilliseconds: 100) == .refused)
    }

    /// Viewers are counted by the listener's name that the kernel gives each accepted connection.
    @Test func sockDiagNamesAcceptedConnectionsByTheirListener() throws {
        let scratch = try Scratch()
        let server = try FakeVNCServer(directory: scratch.path)
        let client = try RFBClient.connect(.unixSocket(path: server.path), xvnc: nil, timeout: .seconds(2))
        _ = try client.greet()
        let named = ProcFS.unixSockets(states: [ProcFS.UnixSocket.established]).filter { $0.name == server.path }
        #expect(named.count == 1)
        let listeners = ProcFS.unixSockets(states: [ProcFS.UnixSocket.listen]).filter { $0.name == server.path }
        #expect(listeners.count == 1)
        #expect(ProcFS.socketInodes(of: getpid()).contains(try #require(listeners.first).inode))
    }
}
