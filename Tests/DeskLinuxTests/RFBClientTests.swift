import DeskPOSIX
import DeskCore
@testable import DeskLinux
import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport

@Suite struct RFBClientTests {
    @Test func itLogsInWithThePasswordAndGetsAnUpdate() throws {
        let scratch = try Scratch()
        let server = try FakeVNCServer(directory: scratch.path)
        defer { server.stop() }
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
        defer { server.stop() }
        let client = try RFBClient.connect(.unixSocket(path: server.path), xvnc: nil, timeout: .seconds(5))
        let greeting = try client.greet()
        #expect(throws: RFBClient.Failure.rejected("the server refused the password")) { try client.authenticate(greeting, password: "wrong123") }
    }

    /// The server is this test process; a client that expects another pid must hang up before
    /// it reads or sends a byte of RFB, so a squatter never gets a password response.
    @Test func aServerThatIsNotTheSessionsXvncGetsNothing() throws {
        let scratch = try Scratch()
        let server = try FakeVNCServer(directory: scratch.path)
        defer { server.stop() }
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
        defer { server.stop() }
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
        defer { server.stop() }
        let client = try RFBClient.connect(.unixSocket(path: server.path), xvnc: nil, timeout: .seconds(2))
        _ = try client.greet()
        let named = ProcFS.unixSockets(states: [ProcFS.UnixSocket.established]).filter { $0.name == server.path }
        #expect(named.count == 1)
        let listeners = ProcFS.unixSockets(states: [ProcFS.UnixSocket.listen]).filter { $0.name == server.path }
        #expect(listeners.count == 1)
        #expect(ProcFS.socketInodes(of: getpid()).contains(try #require(listeners.first).inode))
    }
}
