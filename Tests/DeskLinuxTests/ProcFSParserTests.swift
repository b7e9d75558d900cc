import DeskPOSIX
@testable import DeskHost
@testable import DeskLinux
import DeskSessionProtocol
import Glibc
import Testing

/// The parsers of /proc, on text laid out as the kernel lays it out (including what a user can
/// put in it: a command name with spaces and parentheses, a socket path with a space), and on
/// the test process's own /proc entries and the processes and sockets it makes itself.
@Suite struct ProcFSParserTests {
    /// A stat line whose fields after the command name are `rest` (field 3 onwards).
    static func stat(pid: pid_t = 4321, comm: String, rest: String = "S 1 4321 4322 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n") -> String {
        "\(pid) (\(comm)) \(rest)"
    }

    // MARK: /proc/PID/stat

    @Test func aStatLineGivesStateGroupSessionAndStartTime() {
        let process = ProcFS.Process(pid: 4321, stat: Self.stat(comm: "Xvnc"))
        #expect(process == ProcFS.Process(pid: 4321, state: "S", startTicks: 98765, parent: 1, processGroup: 4321, session: 4322))
    }

    /// A process names itself: its command name may hold spaces, parentheses, and what looks
    /// like the fields that follow. The fields resume after the last ')'.
    @Test(arguments: ["a b", "x) Z 9 9 9", "(", ")", ") (", "x)) R 1 2 3 4 5", "  ", "new\nline", ""])
    func aCommandNameCannotForgeTheFieldsAfterIt(comm: String) {
        let process = ProcFS.Process(pid: 4321, stat: Self.stat(comm: comm))
        #expect(process?.state == "S")
        #expect(process?.processGroup == 4321 && process?.session == 4322 && process?.startTicks == 98765)
    }

    @Test func aTruncatedOrForeignStatLineIsNoProcess() {
        #expect(ProcFS.Process(pid: 1, stat: "") == nil)
        #expect(ProcFS.Process(pid: 1, stat: "1 (init S 1 1 1") == nil)   // no ')'
        #expect(ProcFS.Process(pid: 1, stat: "1 (init) S 1 1 1 0 -1") == nil)   // too few fields
        #expect(ProcFS.Process(pid: 1, stat: Self.stat(comm: "a", rest: "S 1 x 4322 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 98765\n")) == nil)
        #expect(ProcFS.Process(pid: 1, stat: Self.stat(comm: "a", rest: "S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5\n")) == nil)
    }

    @Test func theTestProcessReadsItsOwnStat() throws {
        let me = try #require(ProcFS.process(getpid()))
        #expect(me.pid == getpid() && me.processGroup == getpgrp() && me.session == getsid(0))
        // The main thread's state: the test may run on another thread while it sleeps.
        #expect("RS".contains(me.state) && me.startTicks > 0)
        #expect(ProcFS.isAlive(getpid()))
        #expect(ProcFS.process(0) == nil && ProcFS.process(-1) == nil)
    }

    /// A real process whose command name is a trap: exec'd through a symlink so named.
    @Test func aRealProcessWithParenthesesInItsNameIsReadRight() throws {
        let scratch = try Scratch()
        let name = "x) Z 1 2 (y"   // 11 bytes: the kernel keeps command names up to 15
        let trap = scratch.path + "/" + name
        try #require(symlink("/bin/sleep", trap) == 0)
        let pid = try #require(Self.spawn(trap, ["30"]))
        defer { kill(pid, SIGKILL); waitpid(pid, nil, 0) }
        // posix_spawn returns as the exec begins; the name is the new one a moment later.
        #expect(Self.eventually { ProcFS.readText("/proc/\(pid)/comm") == name + "\n" })
        let process = try #require(ProcFS.process(pid))
        // Asleep, running, or (on a loaded machine, still paging its binary in) in disk sleep:
        // the point is that the name's ") Z " was not read as the state.
        #expect("SRD".contains(process.state), "state \(process.state)")
        #expect(process.processGroup == getpgrp() && process.session == getsid(0))
        #expect(ProcFS.isAlive(pid))
        kill(pid, SIGKILL)
        // Killed but not yet reaped: a zombie, which is not alive.
        for _ in 0..<200 where ProcFS.process(pid)?.state != "Z" { usleep(5000) }
        #expect(ProcFS.process(pid)?.state == "Z" && !ProcFS.isAlive(pid))
    }

    // MARK: /proc/PID/status

    @Test func theUidLineGivesRealEffectiveSavedAndFilesystemUids() {
        let status = "Name:\tUid: 0\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t77\nPPid:\t1\nUid:\t1000\t1001\t1002\t1003\nGid:\t100\t100\t100\t100\n"
        #expect(ProcFS.uids(status: status) == [1000, 1001, 1002, 1003])
        #expect(ProcFS.uids(status: "Name:\tx\nGid:\t0\t0\t0\t0\n") == [])
        #expect(ProcFS.uids(status: "") == [])
    }

    @Test func theTestProcessReadsItsOwnUids() {
        let uids = ProcFS.uids(of: getpid())
        #expect(uids.count == 4 && uids.first == getuid() && uids.dropFirst().first == geteuid())
        #expect(ProcFS.uid(of: getpid()) == getuid())
        #expect(ProcFS.uids(of: -1) == [])
    }

    // MARK: /proc/net/tcp and tcp6

    static let tcp = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0100007F:170D 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 123456 1 0000000000000000 100 0 0 10 0
           1: 0100007F:8AE2 0100007F:170D 01 00000000:00000000 02:000A1B2C 00000000     0        0 123457 2 0000000000000000 20 4 30 10 -1
           2: garbage
        """
    static let tcp6 = """
          sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 00000000000000000000000000000000:170C 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   116        0 2222 1 0000000000000000 100 0 0 10 0

        """

    @Test func tcpRowsGivePortsStateOwnerAndInode() {
        #expect(ProcFS.tcpSockets(table: Self.tcp) == [
            ProcFS.TCPSocket(localPort: 5901, remotePort: 0, state: ProcFS.TCPSocket.listen, inode: 123456, uid: 1000),
            ProcFS.TCPSocket(localPort: 35554, remotePort: 5901, state: ProcFS.TCPSocket.established, inode: 123457, uid: 0),
        ])
        #expect(ProcFS.tcpSockets(table: Self.tcp6) == [
            ProcFS.TCPSocket(localPort: 5900, remotePort: 0, state: ProcFS.TCPSocket.listen, inode: 2222, uid: 116),
        ])
        // The header alone, or nothing, is no socket.
        #expect(ProcFS.tcpSockets(table: String(Self.tcp.prefix(while: { $0 != "\n" }))).isEmpty)
        #expect(ProcFS.tcpSockets(table: "").isEmpty)
    }

    /// The fallback reads the same socket as sock_diag does: a listener the test binds itself.
    @Test func theProcFallbackFindsTheSameListenerAsSockDiag() throws {
        let listener = try #require(LoopbackListener())
        let port = listener.port
        let fromProc = ProcFS.procTCPSockets().filter { $0.localPort == port && $0.state == ProcFS.TCPSocket.listen }
        let fromDiag = ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen], localPorts: port...port)
        #expect(fromProc.count == 1 && fromProc == fromDiag)
        #expect(fromProc.first?.uid == getuid())
        #expect(ProcFS.socketInodes(of: getpid()).contains(fromProc.first?.inode ?? 0))
    }

    // MARK: /proc/net/unix

    static let unix = """
        Num       RefCount Protocol Flags    Type St Inode Path
        0000000000000000: 00000002 00000000 00010000 0001 01 23456 /tmp/.X11-unix/X1
        0000000000000000: 00000002 00000000 00010000 0001 01 23457 @/tmp/.X11-unix/X1
        0000000000000000: 00000003 00000000 00000000 0001 03 23458 /tmp/.X11-unix/X2
        0000000000000000: 00000002 00000000 00010000 0001 01   459
        0000000000000000: 00000002 00000000 00010000 0001 01 23460 /tmp/.X11-unix/X3 trailing words
        0000000000000000: 00000002 00000000 00010000 0005 01 23461 /run/other.sock
        0000000000000000: 00000002 00000000 0001000 0001 01 23462 /tmp/.X11-unix/X4

        """

    @Test func onlyListeningUnixSocketsWithTheWantedPrefixesAreKeptWholeNamed() {
        let paths = ProcFS.listeningUnixSocketPaths(table: Self.unix, prefixes: XSocketNames.prefixes)
        // X2 is connected, not listening; the unnamed listener and X4 (not listening) are not
        // kept; X3's name is all of it, spaces included, not a display it only starts like.
        #expect(paths == ["/tmp/.X11-unix/X1", "@/tmp/.X11-unix/X1", "/tmp/.X11-unix/X3 trailing words"])
        #expect(ProcFS.listeningUnixSocketPaths(table: Self.unix, prefixes: []).isEmpty)
        #expect(ProcFS.listeningUnixSocketPaths(table: "", prefixes: ["/"]).isEmpty)
    }

    /// The same on the kernel's own /proc/net/unix, with a listener the test binds: a name with a
    /// space is read whole (before, only up to the space).
    @Test func aRealListenerWithASpaceInItsNameIsReadWhole() throws {
        let scratch = try Scratch()
        let path = scratch.path + "/X9 listening"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        try #require(UnixSocketAddress(path)!.withSockaddr { bind(fd, $0, $1) } == 0 && listen(fd, 1) == 0)
        let table = try #require(ProcFS.readText("/proc/net/unix"))
        #expect(ProcFS.listeningUnixSocketPaths(table: table, prefixes: [scratch.path + "/X9"]) == [path])
        #expect(ProcFS.listeningUnixSocketPaths(prefixes: [scratch.path + "/X9"]) == [path])
    }

    // MARK: /proc/PID/environ

    @Test func theSessionMarkerMatchesOnlyAsOneWholeEntry() {
        func environ(_ entries: [String]) -> [UInt8] { entries.flatMap { Array($0.utf8) + [0] } }
        let id = "0123abcd"
        #expect(ProcessSweep.carriesMarker(environ: environ(["HOME=/home/a", "DESKD_SESSION=0123abcd", "PATH=/bin"]), sessionID: id))
        #expect(ProcessSweep.carriesMarker(environ: environ(["DESKD_SESSION=0123abcd"]), sessionID: id))
        // The last entry of a read cut at the limit has no NUL after it.
        #expect(ProcessSweep.carriesMarker(environ: Array("A=1\0DESKD_SESSION=0123abcd".utf8), sessionID: id))
        #expect(!ProcessSweep.carriesMarker(environ: environ(["DESKD_SESSION=0123abcdef"]), sessionID: id))
        #expect(!ProcessSweep.carriesMarker(environ: environ(["DESKD_SESSION=0123abc"]), sessionID: id))
        #expect(!ProcessSweep.carriesMarker(environ: environ(["X=DESKD_SESSION=0123abcd"]), sessionID: id))
        #expect(!ProcessSweep.carriesMarker(environ: environ(["XDESKD_SESSION=0123abcd"]), sessionID: id))
        #expect(!ProcessSweep.carriesMarker(environ: [], sessionID: id))
    }

    /// A child of the test's, with the marker in its environment, is found by its /proc entry;
    /// one whose marker only starts like it is not.
    @Test func aProcessCarryingTheMarkerIsFound() throws {
        let id = "sweep-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let marked = try #require(Self.spawn("/bin/sleep", ["30"], environment: ["PATH=/bin", "\(ProcessSweep.markerKey)=\(id)"]))
        defer { kill(marked, SIGKILL); waitpid(marked, nil, 0) }
        let near = try #require(Self.spawn("/bin/sleep", ["30"], environment: ["\(ProcessSweep.markerKey)=\(id)x"]))
        defer { kill(near, SIGKILL); waitpid(near, nil, 0) }
        // The new environment is readable a moment after posix_spawn returns.
        for pid in [marked, near] {
            #expect(Self.eventually { ProcFS.read("/proc/\(pid)/environ").map { $0.split(separator: 0).count == (pid == marked ? 2 : 1) } == true })
        }
        #expect(ProcessSweep.pids(uid: getuid(), sessionID: id) == [marked])
        #expect(ProcessSweep.pids(uid: getuid() &+ 1, sessionID: id).isEmpty)
    }

    /// Whether `condition` holds within two seconds.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<400 {
            if condition() { return true }
            usleep(5000)
        }
        return condition()
    }

    /// Starts `path` with `arguments`; returns as it is exec'd.
    static func spawn(_ path: String, _ arguments: [String], environment: [String] = ["PATH=/bin"]) -> pid_t? {
        var pid: pid_t = 0
        let status = ([path] + arguments).withCStringArray { argv in
            environment.withCStringArray { envp in posix_spawn(&pid, path, nil, nil, argv, envp) }
        }
        return status == 0 ? pid : nil
    }
}

@Suite struct ResidentMemoryTests {
    @Test func statmsSecondFieldIsResidentPages() {
        #expect(ProcFS.residentBytes(statm: "5123 1234 456 12 0 789 0\n", pageSize: 4096) == 1234 * 4096)
        #expect(ProcFS.residentBytes(statm: "garbage", pageSize: 4096) == nil)
        #expect((ProcFS.ownResidentBytes() ?? 0) > 0)
    }

    @Test func memAvailableIsReadInKibibytes() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\nBuffers: 1 kB\n"
        #expect(ProcFS.memoryAvailableBytes(meminfo: meminfo) == 20_000_000 * 1024)
        #expect(ProcFS.memoryAvailableBytes(meminfo: "MemTotal: 1 kB\n") == nil)
        #expect((ProcFS.memoryAvailableBytes() ?? 0) > 0)
    }
}

/// The start's check of a desktop's descriptors (is one of them its X connection?) reads a
/// user's process: it stops at the first match and never reads more than it is given.
@Suite struct SocketScanTests {
    @Test func aSocketIsFoundOnlyWithinTheScanLimit() throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let saved = limit
        limit.rlim_cur = min(limit.rlim_max, 4096)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        defer { var saved = saved; setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) }
        try #require(limit.rlim_cur > 3000, "needs descriptor 3000; RLIMIT_NOFILE allows \(limit.rlim_cur)")

        // 1,200 descriptors below the socket's, so its entry comes after the first 1,024.
        let padding = (0..<1200).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
        defer { padding.forEach { close($0) } }
        try #require(padding.allSatisfy { $0 >= 0 })
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        // Moved to descriptor 3000 and up, so no descriptor another test frees meanwhile brings it forward.
        let high = fcntl(pair[0], F_DUPFD_CLOEXEC, 3000)
        close(pair[0])
        defer { close(high); close(pair[1]) }
        try #require(high >= 3000)
        var info = stat()
        try #require(fstat(high, &info) == 0)
        let inode = UInt64(info.st_ino)

        #expect(ProcFS.holdsSocket(of: getpid(), among: [inode], scanning: .max))
        #expect(ProcFS.socketInodes(of: getpid()).contains(inode))
        #expect(!ProcFS.holdsSocket(of: getpid(), among: [inode], scanning: 1024), "the scan went past its limit")
        #expect(!ProcFS.holdsSocket(of: getpid(), among: [inode &+ 1 << 40], scanning: .max))
    }
}
