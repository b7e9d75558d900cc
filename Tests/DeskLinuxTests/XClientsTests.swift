import DeskCore
@testable import DeskLinux
import Foundation
import Glibc
import Testing

/// The census of a display's X clients (issue 27): who connected, as the kernel recorded it,
/// read from the server's accepted ends. A child process plays the X server (a listener on the
/// display's abstract name, as Xvnc has, which accepts and holds every connection); other
/// children of this process connect to it.
@Suite struct XClientsTests {
    /// A display no test host runs an X server on.
    static let display = Display(1940 + Int(getpid() % 10))

    static func python(_ program: String) throws -> (Process, Pipe) {
        let process = Process(), output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", program]
        process.standardOutput = output
        try process.run()
        return (process, output)
    }

    @Test func theCensusNamesTheOwnersClientsBelowTheHelperAndNoOneElse() throws {
        let name = "\\0/tmp/.X11-unix/X\(Self.display.number)"
        let (server, ready) = try Self.python("""
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX); s.bind('\(name)'); s.listen(8)
            print('listening', flush=True)
            held = []
            while True: held.append(s.accept()[0])
            """)
        let client = "import socket, time; s = socket.socket(socket.AF_UNIX); s.connect('\(name)'); time.sleep(60)"
        var clients: [Process] = []
        defer { for process in clients + [server] { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(String(decoding: ready.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("listening"))
        for _ in 0..<2 { clients.append(try Self.python(client).0) }
        let children = Set(clients.map(\.processIdentifier)), xvnc = server.processIdentifier

        // This process is the clients' parent (their "deskd-session").
        var found = XClients.Census.clients([])
        #expect(Self.eventually { found = XClients.census(xvnc: xvnc, display: Self.display, owner: getuid(), helper: getpid()); return found == .clients(Array(children)) || found == .clients(Array(children).reversed()) }, "\(found)")
        // Another owner's clients do not count: a user knocking on someone else's display.
        #expect(XClients.census(xvnc: xvnc, display: Self.display, owner: getuid() &+ 4242, helper: getpid()) == .clients([]))
        // Nor do clients outside the session's process tree.
        #expect(XClients.census(xvnc: xvnc, display: Self.display, owner: getuid(), helper: clients[0].processIdentifier) == .clients([]))
        // Only the display's own socket: the same clients on another display are not its.
        #expect(XClients.census(xvnc: xvnc, display: Display(Self.display.number + 20), owner: getuid(), helper: getpid()) == .clients([]))
    }

    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
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
