import DeskCore
@testable import DeskLinux
import Foundation
import Glibc
import Testing

/// The census of a display's X clients (issue 27): who connected, as the kernel recorded it,
/// read from the server's accepted ends. This process plays the X server (a listener on the
/// display's abstract name, as Xvnc has); real child processes connect.
@Suite struct XClientsTests {
    /// A display no test host runs an X server on.
    static let display = Display(1987 + Int(getpid() % 10))

    /// Listens on "@/tmp/.X11-unix/XN" (the abstract twin of the display's socket).
    static func listen(on display: Display) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("/tmp/.X11-unix/X\(display.number)".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0
            for (offset, byte) in name.enumerated() { path[offset + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, Glibc.listen(fd, 8) == 0 else { close(fd); return nil }
        return fd
    }

    /// A child that connects to the display and waits; returns once the server accepted it.
    static func client(of display: Display, server: Int32, accepted: inout [Int32]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import socket, time; s = socket.socket(socket.AF_UNIX); s.connect('\\0/tmp/.X11-unix/X\(display.number)'); time.sleep(60)"]
        try process.run()
        var entry = pollfd(fd: server, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 10_000) == 1 else { throw CocoaError(.fileReadUnknown) }
        accepted.append(accept(server, nil, nil))
        return process
    }

    @Test func theCensusNamesTheOwnersClientsBelowTheHelperAndNoOneElse() throws {
        let server = try #require(Self.listen(on: Self.display))
        var accepted: [Int32] = []
        let first = try Self.client(of: Self.display, server: server, accepted: &accepted)
        let second = try Self.client(of: Self.display, server: server, accepted: &accepted)
        defer {
            for process in [first, second] { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
            (accepted + [server]).forEach { close($0) }
        }
        let children = Set([first.processIdentifier, second.processIdentifier])

        // This process is the "X server" and the children's parent (their "deskd-session").
        let found = XClients.census(xvnc: getpid(), display: Self.display, owner: getuid(), helper: getpid())
        #expect(found == .clients(Array(children)) || found == .clients(Array(children).reversed()), "\(found)")
        // Another owner's clients do not count: a user knocking on someone else's display.
        #expect(XClients.census(xvnc: getpid(), display: Self.display, owner: getuid() &+ 4242, helper: getpid()) == .clients([]))
        // Nor do clients outside the session's process tree.
        #expect(XClients.census(xvnc: getpid(), display: Self.display, owner: getuid(), helper: first.processIdentifier) == .clients([]))
        // Only the display's own socket: the same clients on another display are not its.
        #expect(XClients.census(xvnc: getpid(), display: Display(Self.display.number + 20), owner: getuid(), helper: getpid()) == .clients([]))
    }

    @Test func aGoneServerHasNoClients() {
        #expect(XClients.census(xvnc: 999_999_999, display: Self.display, owner: getuid(), helper: getpid()) == .clients([]))
    }

    @Test func descentIsFollowedThroughParents() {
        #expect(XClients.descends(getpid(), from: getppid()) || getppid() <= 1)
        #expect(!XClients.descends(getppid(), from: getpid()))
        #expect(!XClients.descends(getpid(), from: 1))
    }
}
