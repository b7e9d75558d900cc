import CDeskShims
import Glibc
import Testing

/// The sock_diag readers over datagrams built here, byte by byte, as the kernel lays them out:
/// a Unix socket's name in them is whatever its user bound, and the fuzzer's `sock-diag` target
/// feeds them any bytes. These are the cases the fuzzer's property cannot see.
@Suite struct SockDiagDatagramTests {
    /// A netlink message: its header (length, type, flags, sequence, port) and payload, padded to 4.
    static func message(type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        var bytes = le(UInt32(16 + payload.count)) + le(type) + le(UInt16(0)) + le(UInt32(1)) + le(UInt32(0))
        bytes += payload
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    /// A route attribute: length, type, payload, padded to 4.
    static func attribute(type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        var bytes = le(UInt16(4 + payload.count)) + le(type) + payload
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    /// One Unix socket's message (`unix_diag_msg`: family, type, state, pad, inode, cookie) and its attributes.
    static func unixSocket(inode: UInt32, attributes: [[UInt8]]) -> [UInt8] {
        let header: [UInt8] = [UInt8(AF_UNIX), UInt8(SOCK_STREAM.rawValue), 10, 0] + le(inode) + le(UInt32(0)) + le(UInt32(0))
        return message(type: 20, header + attributes.joined())   // SOCK_DIAG_BY_FAMILY
    }

    /// The kernel's error (NLMSG_ERROR): a negative errno and the request it answers.
    static func error(_ value: Int32) -> [UInt8] {
        message(type: 2, le(UInt32(bitPattern: value)) + [UInt8](repeating: 0, count: 16))
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    /// The Unix reader over `datagram`, in a buffer aligned as the kernel's is.
    static func unixSockets(in datagram: [UInt8], prefix: String = "/tmp/.X11-unix/") -> (count: Int32, errno: Int32, sockets: [deskd_unix_socket]) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(datagram.count, 1), alignment: 8)
        defer { buffer.deallocate() }
        datagram.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: datagram.count) }
        var out = [deskd_unix_socket](repeating: deskd_unix_socket(), count: 4)
        return prefix.withCString { prefix in
            var prefixes: [UnsafePointer<CChar>?] = [prefix]
            errno = 0
            let count = deskd_unix_sockets_in(buffer, Int32(datagram.count), &prefixes, 1, &out, Int32(out.count))
            return (count, errno, Array(out.prefix(Int(max(0, count)))))
        }
    }

    static func name(of socket: deskd_unix_socket) -> [UInt8] {
        withUnsafeBytes(of: socket.name) { Array($0) }
    }

    /// A second name replaces the first whole: a short one after a long one keeps no byte of it.
    @Test func aSecondNameLeavesNothingOfTheFirst() throws {
        let long = Array("/tmp/.X11-unix/X12345".utf8), short = Array("/tmp/.X11-unix/X1".utf8)
        let read = Self.unixSockets(in: Self.unixSocket(inode: 7, attributes: [
            Self.attribute(type: 0, long + [0]), Self.attribute(type: 0, short + [0]),   // UNIX_DIAG_NAME twice
        ]))
        #expect(read.count == 1)
        let socket = try #require(read.sockets.first)
        #expect(socket.inode == 7 && Int(socket.name_length) == short.count)
        #expect(Self.name(of: socket).prefix(short.count + 8) == ArraySlice(short + [UInt8](repeating: 0, count: 8)))
    }

    /// A name as long as the field or longer is cut to leave its terminating NUL; an abstract one reads as "@…".
    @Test func aLongNameIsCutAndAnAbstractOneIsMarked() throws {
        let long = Array("/tmp/.X11-unix/".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 200)
        let read = Self.unixSockets(in: Self.unixSocket(inode: 1, attributes: [Self.attribute(type: 0, long)]))
        let socket = try #require(read.sockets.first)
        #expect(Int(socket.name_length) == MemoryLayout.size(ofValue: socket.name) - 1)
        #expect(Self.name(of: socket).last == 0)

        let abstract = Self.unixSockets(in: Self.unixSocket(inode: 2, attributes: [Self.attribute(type: 0, [0] + Array("deskd".utf8))]), prefix: "@desk")
        #expect(abstract.sockets.map { Self.name(of: $0).prefix(Int($0.name_length)) } == [ArraySlice(Array("@deskd".utf8))])
    }

    /// The kernel's error is a negative errno and is passed on as one; anything else (a positive
    /// value, one past the errno range, the most negative Int32, which cannot be negated) is EIO.
    @Test func onlyAnErrnoIsPassedOnAsOne() {
        let missing = Self.unixSockets(in: Self.error(-ENOENT))
        #expect(missing.count == -1 && missing.errno == ENOENT)
        for notAnErrno: Int32 in [5, -4096, -5000, .min, .max] {
            let read = Self.unixSockets(in: Self.error(notAnErrno))
            #expect(read.count == -1 && read.errno == EIO, "error \(notAnErrno)")
        }
        // Shorter than its error: not read past its end (Tests/FuzzRegressions/sock-diag/short-error).
        var short = Array(Self.error(-ENOENT).prefix(18))
        short.replaceSubrange(0..<4, with: Self.le(UInt32(short.count)))
        let cut = Self.unixSockets(in: short)
        #expect(cut.count == -1 && cut.errno == EIO)
    }
}
