import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// The census of a display's X clients (issue 27), from the kernel's tables: the connections
/// the server accepted on the display's socket, and which candidates hold their peers. A child
/// process plays the X server (a listener on the display's abstract name, as Xvnc has, which
/// accepts and holds every connection); other children of this process connect to it.
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

    @Test func theCensusNamesTheCandidatesHoldingTheDisplayAndNoOneElse() throws {
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

        // The candidates are the session's processes: of them, exactly those holding a
        // connection to the display are named.
        let bystander = getpid()
        var found: [pid_t]? = []
        #expect(Self.eventually { found = XClients.holders(among: Array(children) + [bystander], server: xvnc, socket: .x11(Self.display)); return Set(found ?? []) == children }, "\(String(describing: found))")
        #expect(XClients.holders(among: [clients[0].processIdentifier], server: xvnc, socket: .x11(Self.display)) == [clients[0].processIdentifier])
        // A process that is not a candidate (another user's, outside the session) is never named.
        #expect(XClients.holders(among: [bystander], server: xvnc, socket: .x11(Self.display)) == [])
        // Only the display's own socket: the same clients on another display are not its.
        #expect(XClients.holders(among: Array(children), server: xvnc, socket: .x11(Display(Self.display.number + 20))) == [])
        // The server itself is never its own client.
        #expect(XClients.holders(among: [xvnc], server: xvnc, socket: .x11(Self.display)) == [])
    }

    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    @Test func aGoneServerHasNoClients() {
        #expect(XClients.holders(among: [getpid()], server: 999_999_999, socket: .x11(Self.display)) == [])
    }
}
