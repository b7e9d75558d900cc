import DeskSessionProtocol
import Glibc
import Testing

/// The spec as deskd encodes it and deskd-session decodes it: the same code both ways, so a
/// spec comes back as it went, and what deskd-session refuses it refuses for a reason.
@Suite struct SessionSpecTests {
    static let spec = SessionSpec(
        user: "alice", uid: 1001, gid: 1002, home: "/home/alice smith", display: ":7", sessionID: "s1",
        logDirectory: "/var/lib/deskd/logs/alice/s1", logLimit: 1 << 20, journal: true,
        cgroup: "/sys/fs/cgroup/deskd.service/deskd-sessions/s1", server: ["/usr/bin/Xvnc", ":7", "-geometry", "1280x800"],
        serverUmask: 0o027, desktop: ["/bin/sh", "/run/deskd/by-id/s1/xstartup"], environment: ["DISPLAY=:7", "PATH=/usr/bin:/bin"])

    /// Decodes `bytes`, and says what was left unread after the spec.
    static func decode(_ bytes: [UInt8]) throws(SessionSpec.Failure) -> (spec: SessionSpec, unread: [UInt8]) {
        var iterator = bytes.makeIterator()
        let spec = try SessionSpec.decode { iterator.next() }
        return (spec, Array(IteratorSequence(iterator)))
    }

    /// A stream of `pairs` ended by `start`, as a deskd that spelled it by hand would write it.
    static func stream(_ pairs: [(String, String)]) -> [UInt8] {
        pairs.flatMap { Array($0.0.utf8) + [0] + Array($0.1.utf8) + [0] } + Array("start".utf8) + [0]
    }

    static let required: [(String, String)] = [("user", "alice"), ("uid", "1001"), ("server", "Xvnc"), ("desktop", "sh"), ("log-directory", "/l")]

    @Test(arguments: [
        spec,
        SessionSpec(user: "b", uid: 2000, logDirectory: "/l", server: ["X"], desktop: ["", "x"], environment: ["EMPTY="]),
        SessionSpec(user: "c", uid: 3000, home: "", logDirectory: "/l", logLimit: 0, server: ["start"], serverUmask: 0, desktop: ["start"],
                    environment: ["start=start"]),
        SessionSpec(user: "d", uid: 4000, logDirectory: "/l", server: ["/bin/sh", "-c", "exec wayvnc"], desktop: ["sh"], sessionType: "wayland"),
    ])
    func aSpecComesBackAsItWent(_ spec: SessionSpec) throws {
        let (decoded, unread) = try Self.decode(try spec.encoded())
        #expect(decoded == spec)
        #expect(unread.isEmpty)
    }

    /// An X desktop's spec says nothing of its session type (as before there was another), and
    /// a type that is neither X's nor Wayland's is refused.
    @Test func theSessionTypeTravelsOnlyWhenItIsNotX() throws {
        #expect(!String(decoding: try Self.spec.encoded(), as: UTF8.self).contains("session-type"))
        #expect(try Self.decode(Self.stream(Self.required)).spec.sessionType == "x11")
        #expect(try Self.decode(Self.stream(Self.required + [("session-type", "wayland")])).spec.sessionType == "wayland")
        #expect(throws: SessionSpec.Failure.bad("'mir' is not a session type (x11 or wayland)")) {
            try Self.decode(Self.stream(Self.required + [("session-type", "mir")]))
        }
    }

    /// The commands follow the spec on the same stdin: the decoder must leave them there.
    @Test func nothingAfterStartIsRead() throws {
        let (_, unread) = try Self.decode(try Self.spec.encoded() + SessionCommand.desktop.encoded)
        #expect(unread == Array("desktop\n".utf8))
    }

    @Test func theBytesReadFromADescriptorAreTheSame() throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let bytes = try Self.spec.encoded() + SessionCommand.stop.encoded
        #expect(bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) } == bytes.count)
        close(fds[1])
        #expect(try SessionSpec.read(from: fds[0]) == Self.spec)
        var rest = [UInt8](repeating: 0, count: 16)
        #expect(read(fds[0], &rest, rest.count) == 5 && Array(rest[..<5]) == Array("stop\n".utf8))
    }

    /// A NUL in a value would end it early and make what follows a key of its own ("uid", say).
    @Test func aNULInAValueIsNotEncoded() {
        var spec = Self.spec
        spec.desktop.append("/bin/sh\0uid\0" + "0")
        #expect(throws: SessionSpec.Failure.bad("a NUL in a value of desktop")) { try spec.encoded() }
        spec = Self.spec
        spec.cgroup = "/\0start\0"
        #expect(throws: SessionSpec.Failure.bad("a NUL in a value of cgroup")) { try spec.encoded() }
    }

    @Test func aFieldOver64KiBIsRefusedBothWays() throws {
        var spec = Self.spec
        spec.environment.append("A=" + String(repeating: "a", count: SessionSpec.fieldLimit - 2))
        #expect(try Self.decode(try spec.encoded()).spec == spec)
        spec.environment[spec.environment.count - 1] += "a"
        #expect(throws: SessionSpec.Failure.bad("a field longer than 64 KiB")) { try spec.encoded() }
        let long = Self.stream(Self.required + [("env", "A=" + String(repeating: "a", count: SessionSpec.fieldLimit))])
        #expect(throws: SessionSpec.Failure.bad("a field longer than 64 KiB")) { try Self.decode(long) }
    }

    @Test func anUnknownKeyIsRefused() {
        #expect(throws: SessionSpec.Failure.bad("an unknown key 'shell'")) { try Self.decode(Self.stream(Self.required + [("shell", "/bin/sh")])) }
    }

    @Test func aNumberThatIsNoneIsRefused() {
        #expect(throws: SessionSpec.Failure.bad("'-1' is not a number for uid")) { try Self.decode(Self.stream([("uid", "-1")] + Self.required)) }
        #expect(throws: SessionSpec.Failure.bad("'8' is not a number for server-umask")) {
            try Self.decode(Self.stream(Self.required + [("server-umask", "8")]))
        }
    }

    @Test(arguments: ["user", "uid", "server", "desktop", "log-directory"])
    func aMissingFieldIsRefused(_ key: String) {
        #expect(throws: SessionSpec.Failure.bad("the spec names no user, no uid other than root's, no display server, no desktop or no log directory")) {
            try Self.decode(Self.stream(Self.required.filter { $0.0 != key }))
        }
    }

    /// During a package upgrade the old deskd still runs for a while and starts the new
    /// deskd-session with its former keys; the spec reads, and says to answer in those words.
    @Test func aSpecFromADeskdOfBeforeReadsAndAsksForItsWords() throws {
        let former = Self.stream([("user", "alice"), ("uid", "1001"), ("xvnc", "Xvnc"), ("xvnc", ":7"), ("xvnc-umask", "27"),
                                  ("desktop", "sh"), ("log-directory", "/l")])
        let spec = try Self.decode(former).spec
        #expect(spec.server == ["Xvnc", ":7"] && spec.serverUmask == 0o27 && spec.speaksFormerWords)
        #expect(!(try Self.decode(try Self.spec.encoded()).spec.speaksFormerWords))
        #expect(SessionReply.server(812).line(former: true) == "xvnc 812")
        #expect(SessionReply.exit(.server, .exited(status: 0)).line(former: true) == "exit xvnc exited with status 0")
        #expect(SessionReply.exit(.desktop, .exited(status: 0)).line(former: true) == "exit desktop exited with status 0")
        #expect(ProcessRole.server.word(former: true) == "xvnc" && ProcessRole.server.word(former: false) == "server")
    }

    @Test func rootIsNoSessionOwner() {
        #expect(throws: SessionSpec.Failure.self) { try Self.decode(Self.stream(Self.required + [("uid", "0")])) }
    }

    /// A stream that stops short (deskd died, or someone ran the helper by hand).
    @Test func aStreamEndedBeforeStartIsIncomplete() throws {
        let bytes = try Self.spec.encoded()
        #expect(throws: SessionSpec.Failure.incomplete) { try Self.decode(Array(bytes.dropLast())) }
        #expect(throws: SessionSpec.Failure.incomplete) { try Self.decode([]) }
    }
}
