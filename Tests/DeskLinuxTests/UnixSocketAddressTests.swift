import DeskPOSIX
@testable import DeskLinux
import Glibc
import Testing

/// sun_path holds 108 bytes: a path fits in 107 and its NUL, an abstract name (written "@name")
/// in all 108. Checked with sockets the test binds itself, and what the kernel says it bound.
@Suite struct UnixSocketAddressTests {
    /// The length and bytes of the address, as connect or bind would get them.
    static func raw(_ address: UnixSocketAddress) -> (length: Int, family: Int32, path: [UInt8]) {
        address.withSockaddr { pointer, length in
            pointer.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { un in
                let path = withUnsafeBytes(of: un.pointee.sun_path) { Array($0.prefix(Int(length) - MemoryLayout<sa_family_t>.size)) }
                return (Int(length), Int32(un.pointee.sun_family), path)
            }
        }
    }

    /// What the kernel says `fd` is bound to.
    static func boundName(_ fd: Int32) -> [UInt8] {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let ok = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard ok == 0 else { return [] }
        return withUnsafeBytes(of: address.sun_path) { Array($0.prefix(Int(length) - MemoryLayout<sa_family_t>.size)) }
    }

    @Test func aPathIsCountedWithItsNULAndAnAbstractNameWithout() throws {
        let path = try #require(UnixSocketAddress("/run/x"))
        #expect(Self.raw(path).family == AF_UNIX)
        #expect(Self.raw(path).length == 2 + 6 + 1 && Self.raw(path).path == Array("/run/x".utf8) + [0])
        let abstract = try #require(UnixSocketAddress("@deskd/x"))
        #expect(Self.raw(abstract).length == 2 + 8 && Self.raw(abstract).path == [0] + Array("deskd/x".utf8))
    }

    @Test func aPathOf107BytesBindsAndOne108LongIsRefused() throws {
        let scratch = try Scratch()
        let directory = scratch.path + "/"
        let longest = directory + String(repeating: "s", count: 107 - directory.utf8.count)
        #expect(longest.utf8.count == 107)
        let address = try #require(UnixSocketAddress(longest))
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(address.withSockaddr { bind(fd, $0, $1) } == 0, "bind: \(String(cString: strerror(errno)))")
        #expect(Self.boundName(fd).prefix(while: { $0 != 0 }).elementsEqual(longest.utf8))
        #expect(access(longest, F_OK) == 0)
        #expect(UnixSocketAddress(longest + "s") == nil)
        #expect(UnixSocketAddress(String(repeating: "/", count: 200)) == nil)
        #expect(UnixSocketAddress("") == nil)
    }

    /// An abstract name may fill all 108 bytes (there is no NUL to end it); one more is refused.
    @Test func anAbstractNameOf108BytesBinds() throws {
        let prefix = "@deskd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-"
        let longest = prefix + String(repeating: "a", count: 108 - prefix.utf8.count)
        let address = try #require(UnixSocketAddress(longest))
        #expect(Self.raw(address).length == 2 + 108)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(address.withSockaddr { bind(fd, $0, $1) } == 0, "bind: \(String(cString: strerror(errno)))")
        #expect(Self.boundName(fd) == [0] + Array(longest.utf8.dropFirst()))
        #expect(UnixSocketAddress(longest + "a") == nil)
        // A client reaches it by the same name.
        #expect(listen(fd, 1) == 0)
        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        #expect(address.withSockaddr { connect(client, $0, $1) } == 0)
    }

    /// A NUL inside a path would end it early, at another file: refused. Inside an abstract
    /// name it is just a byte of the name.
    @Test func aNULEndsNoPathEarly() throws {
        #expect(UnixSocketAddress("/tmp/a\0/../../etc/x") == nil)
        let abstract = try #require(UnixSocketAddress("@a\0b"))
        #expect(Self.raw(abstract).path == [0, UInt8(ascii: "a"), 0, UInt8(ascii: "b")])
    }

    /// What systemd hands deskd in $NOTIFY_SOCKET reaches a datagram socket bound there.
    @Test func aDatagramReachesTheNotifySocket() throws {
        let scratch = try Scratch()
        let path = scratch.path + "/notify"
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        defer { close(receiver) }
        try #require(UnixSocketAddress(path)!.withSockaddr { bind(receiver, $0, $1) } == 0)
        let sender = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        let sent = UnixSocketAddress(path)!.withSockaddr { address, length in
            Array("READY=1".utf8).withUnsafeBytes { sendto(sender, $0.baseAddress, $0.count, 0, address, length) }
        }
        #expect(sent == 7)
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = recv(receiver, &buffer, buffer.count, 0)
        #expect(n == 7 && Array(buffer.prefix(7)) == Array("READY=1".utf8))
    }
}
