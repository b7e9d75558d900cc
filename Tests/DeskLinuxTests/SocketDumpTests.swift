import DeskPOSIX
@testable import DeskLinux
import Foundation
import Glibc
import Testing

/// The sock_diag dumps keep only what was asked about, so another user's flood of sockets costs
/// deskd a look in the kernel per socket, never an entry: and a dump larger than its first
/// buffer still comes back whole.
@Suite struct SocketDumpTests {
    /// `count` listening sockets in the abstract namespace, named `prefix` and a number.
    static func listeners(_ count: Int, prefix: String) -> [Int32] {
        (0..<count).compactMap { index in
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let bound = UnixSocketAddress("@\(prefix)\(index)")?.withSockaddr { bind(fd, $0, $1) }
            guard bound == 0, listen(fd, 1) == 0 else { close(fd); return nil }
            return fd
        }
    }

    @Test func aFloodOfOtherSocketsIsFilteredOutAndALargeDumpComesBackWhole() {
        let tag = "deskt-flood-\(getpid())-"
        let flood = Self.listeners(1500, prefix: tag)
        let mine = Self.listeners(1, prefix: "deskt-mine-\(getpid())-")
        defer { (flood + mine).forEach { close($0) } }
        #expect(flood.count == 1500 && mine.count == 1)

        let wanted = ProcFS.unixSockets(states: [ProcFS.UnixSocket.listen], named: ["@deskt-mine-\(getpid())-"])
        #expect(wanted.map(\.name) == ["@deskt-mine-\(getpid())-0"])
        // Three times the first buffer: grown once, and whole.
        let flooded = ProcFS.unixSockets(states: [ProcFS.UnixSocket.listen], named: ["@" + tag])
        #expect(flooded.count == 1500)
        #expect(Set(flooded.map(\.name)).count == 1500)
        #expect(ProcFS.listeningUnixSocketPaths(prefixes: ["@deskt-mine-\(getpid())-"]) == ["@deskt-mine-\(getpid())-0"])
    }

    @Test func tcpDumpsKeepOnlyTheAskedPorts() throws {
        let listener = try #require(LoopbackListener())
        let port = listener.port
        let found = ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen], localPorts: port...port)
        #expect(found.count == 1 && found.first?.localPort == port && found.first?.uid == getuid())
        #expect(ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen]).contains { $0.localPort == port })
        let elsewhere = port == 65535 ? 1...2 : (port + 1)...(port + 1)
        #expect(!ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen], localPorts: elsewhere).contains { $0.localPort == port })
    }
}
