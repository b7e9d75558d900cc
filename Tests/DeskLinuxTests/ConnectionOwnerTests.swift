@testable import DeskLinux
import Glibc
import Testing

/// Issue 48: who made a loopback connection, as the gateway asks the kernel. A socket bound to
/// lo (SO_BINDTODEVICE, no privilege since Linux 5.7) is its maker's too; a peer whose socket
/// is gone has no owner, which the gateway refuses rather than counts under a shared key.
@Suite struct ConnectionOwnerTests {
    /// The accepted end's view of a connection from a socket set up by `prepare`.
    static func owner(prepare: (Int32) -> Void, closeFirst: Bool = false) throws -> uid_t? {
        let listener = try #require(LoopbackListener())
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        prepare(client)
        try #require(InternetSocketAddress.loopback(port: listener.port).withSockaddr { connect(client, $0, $1) } == 0)
        let clientPort = try #require(InternetSocketAddress.boundPort(of: client))
        // Closed before it is accepted: the peer's socket is orphaned, whoever made it.
        if closeFirst { close(client) }
        defer { if !closeFirst { close(client) } }
        let accepted = accept(listener.fd, nil, nil)
        defer { close(accepted) }
        return ConnectionOwner.of(peer: "127.0.0.1", peerPort: clientPort, local: "127.0.0.1", localPort: listener.port)
    }

    @Test func aLoopbackPeerIsItsMakersWhetherOrNotItIsBoundToLo() throws {
        #expect(try Self.owner(prepare: { _ in }) == getuid())
        let bound = try Self.owner(prepare: { fd in
            _ = "lo".withCString { setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, $0, 3) }
        })
        #expect(bound == getuid(), "a socket bound to lo was not found")
    }

    /// The kernel's exact lookup falls back to a listening socket on the asked port when no
    /// connection matches (a second review of issue 48): a peer whose source port someone
    /// listens on must not become that listener's owner.
    @Test func aListenerOnThePeersPortIsNotThePeer() throws {
        let listener = try #require(LoopbackListener())
        #expect(ConnectionOwner.of(peer: "127.0.0.1", peerPort: listener.port, local: "127.0.0.2", localPort: 443) == nil)
    }

    @Test func aPeerClosedBeforeItWasAcceptedHasNoOwner() throws {
        #expect(try Self.owner(prepare: { _ in }, closeFirst: true) == nil)
    }
}
