import DeskPOSIX
import CTestShims
import DeskClient
import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc
import Synchronization
import Testing
import VNCViewer

/// Runs `body` on a thread of its own with `account`'s credentials (or the given gid and
/// groups), as that local user would: the rest of the test process stays root.
func asUser<T: Sendable>(_ account: UserAccount, gid: gid_t? = nil, groups: [gid_t]? = nil, _ body: @escaping @Sendable () -> T) -> T {
    let result = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        let groups = groups ?? account.groups
        let became = groups.withUnsafeBufferPointer { desk_test_thread_become(account.uid, gid ?? account.gid, $0.baseAddress, Int32($0.count)) }
        precondition(became == 0, "could not take \(account.name)'s credentials on a test thread")
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }
    thread.start()
    done.wait()
    return result.withLock { $0! }
}

/// What an X client without the cookie gets: the first byte of the server's reply to a
/// connection setup (0 Failed, 1 Success, 2 Authenticate), or nil if it could not connect.
/// `abstract`: the Linux abstract socket X servers also listen on, which has no file permissions.
func xConnectionSetup(_ display: Display, abstract: Bool) -> UInt8? {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    defer { close(fd) }
    guard let address = UnixSocketAddress((abstract ? "@" : "") + display.socketPath),
          address.withSockaddr({ connect(fd, $0, $1) }) == 0 else { return nil }
    // Little-endian, protocol 11.0, no authorization name or data.
    let setup: [UInt8] = [0x6C, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    guard setup.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == setup.count else { return nil }
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    var reply: UInt8 = 0xFF
    guard poll(&pfd, 1, 5000) == 1, recv(fd, &reply, 1, 0) == 1 else { return nil }
    return reply
}

/// The other local user against a victim's live session: Mallory may not see, type into or
/// connect to Victor's desktop, stall deskd with what she plants, make herself an admin,
/// write to an admin's terminal, flush the audit trail, or squat the session's endpoint.
extension EndToEnd {
@Suite struct OtherUserTests {
    @Test func anotherUserCannotOpenTheDisplayOnAnyTransportButTheOwnersDesktopCan() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let mallory = try TestUsers.ensure("deskt-mallory")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(victor); TestUsers.reap(mallory) }
        let session = try daemon.start(victor.name)
        let display = session.display.description

        // Mallory's X clients are refused: xdpyinfo, a screenshot, and a bare connection setup
        // on the /tmp/.X11-unix socket and on the abstract one.
        let info = try CommandResult.run("/usr/sbin/runuser", ["-u", mallory.name, "--", "/usr/bin/xdpyinfo", "-display", display])
        #expect(info.status != 0 && !info.stdout.contains("vendor string"), "\(info.stdout)")
        let shot = try CommandResult.run("/usr/sbin/runuser", ["-u", mallory.name, "--", "/usr/bin/xwd", "-root", "-silent", "-display", display])
        #expect(shot.status != 0 && shot.stdout.isEmpty)
        // Since issue 48 she cannot even connect: the socket file is behind the owner's 0700
        // directory, and the abstract name is held by deskd-session, never listening.
        #expect(asUser(mallory) { xConnectionSetup(session.display, abstract: false) } == nil)
        #expect(asUser(mallory) { xConnectionSetup(session.display, abstract: true) } == nil)
        // Not even root gets in without the cookie: there is no host-based exception.
        #expect(xConnectionSetup(session.display, abstract: false) == 0)

        // Victor's own clients, with the session's authority file, are let in; his desktop has it.
        let authority = daemon.runtimeDirectory + "/displays/\(session.display.number)/Xauthority"
        let owners = try CommandResult.run("/usr/sbin/runuser", ["-u", victor.name, "--", "/usr/bin/env", "XAUTHORITY=\(authority)", "/usr/bin/xdpyinfo", "-display", display])
        #expect(owners.status == 0 && owners.stdout.contains("vendor string"), "\(owners.stderr)")
        let desktop = try #require(daemon.desktopPid(of: session))
        let environment = String(decoding: ProcFS.read("/proc/\(desktop)/environ") ?? [], as: UTF8.self).split(separator: "\0")
        #expect(environment.contains { $0.hasPrefix("XAUTHORITY=") && $0.hasSuffix("/by-id/\(session.id)/Xauthority") })
        #expect(eventually { ProcFS.allPIDs().contains { ProcFS.uid(of: $0) == victor.uid && (ProcFS.readText("/proc/\($0)/cmdline") ?? "").hasPrefix("xterm") } })
    }

    @Test func onlyTheOwnerReachesTheRFBSocketAndThereIsNoTCPPort() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let mallory = try TestUsers.ensure("deskt-mallory")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(victor); TestUsers.reap(mallory) }
        let session = try daemon.start(victor.name)
        let socketPath = try #require(session.rfbSocket)
        let password = try #require(session.password)

        // Mallory cannot even reach the socket, with or without the password.
        let refused = asUser(mallory) { () -> Int32 in
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            return UnixSocketAddress(socketPath)!.withSockaddr { connect(fd, $0, $1) } == 0 ? 0 : errno
        }
        #expect(refused == EACCES)
        #expect(asUser(mallory) { (try? VNCConnection(.unixSocket(path: socketPath), password: password)) == nil })
        // Nothing listens on the display's TCP port, nor on any port of Xvnc's.
        #expect(RFBHandshake.attempt(port: session.display.rfbPort(), timeoutMilliseconds: 500) == .refused)
        let xvncSockets = ProcFS.socketInodes(of: session.pid)
        #expect(!ProcFS.tcpSockets().contains { xvncSockets.contains($0.inode) })

        // Victor's viewer (libvncclient, through the socket, as Victor) logs in with the password,
        // is counted as a viewer, and a wrong password is refused.
        let viewed = asUser(victor) { () -> (width: Int, refreshed: Bool)? in
            guard let viewer = try? VNCConnection(.unixSocket(path: socketPath), password: password) else { return nil }
            defer { viewer.close() }
            return (viewer.info.width, viewer.refresh() != nil)
        }
        #expect(viewed?.width == 1920 && viewed?.refreshed == true)
        #expect(asUser(victor) { (try? VNCConnection(.unixSocket(path: socketPath), password: "wrong123")) == nil })
        let holder = asUser(victor) { try? VNCConnection(.unixSocket(path: socketPath), password: password) }
        #expect(holder != nil)
        #expect(eventually { (try? daemon.deskctl(["show", session.display.description, "--json"]).decode(Session.self).clients) == 1 })
        holder?.close()
        #expect(eventually { (try? daemon.deskctl(["show", session.display.description, "--json"]).decode(Session.self).clients) == 0 })
        // deskd's own probe goes over the socket too.
        #expect(try daemon.deskctl(["probe", session.display.description]).status == 0)
    }

    /// A socket bound at the session's socket path in another mount namespace (`unshare -rm`
    /// gives any user one) carries the same name in sock_diag; its connections must not count
    /// as viewers, or a user could keep another's idle session from being reaped.
    @Test func connectionsToALookAlikeSocketInAnotherNamespaceAreNotViewers() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(victor) }
        let session = try daemon.start(victor.name)
        let real = daemon.runtimeDirectory + "/by-id/\(session.id)/rfb.sock"
        let byID = daemon.runtimeDirectory + "/by-id"
        let release = DispatchSemaphore(value: 0)
        let ready = DispatchSemaphore(value: 0)
        let connected = Mutex(0)
        let thread = Thread {
            guard desk_test_thread_tmpfs_over(byID) == 0, mkdir(byID + "/\(session.id)", 0o755) == 0 else { ready.signal(); return }
            let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard UnixSocketAddress(real)!.withSockaddr({ bind(listener, $0, $1) }) == 0, listen(listener, 8) == 0 else { ready.signal(); return }
            var fds = [listener]
            for _ in 0..<3 {
                let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                if UnixSocketAddress(real)!.withSockaddr({ connect(client, $0, $1) }) == 0 {
                    fds += [client, accept(listener, nil, nil)]
                    connected.withLock { $0 += 1 }
                }
            }
            ready.signal()
            release.wait()
            for fd in fds { close(fd) }
        }
        thread.start()
        ready.wait()
        defer { release.signal() }
        try #require(connected.withLock { $0 } == 3, "could not set up the look-alike socket")
        // The kernel reports three established connections under the session socket's name...
        #expect(ProcFS.unixSockets(states: [ProcFS.UnixSocket.established]).filter { $0.name == real }.count == 3)
        // ...and deskd counts none of them: Xvnc holds none.
        usleep(1_500_000)
        let shown = try daemon.deskctl(["show", session.display.description, "--json"]).decode(Session.self)
        #expect(shown.clients == 0)
    }

    enum Plant: String, CaseIterable {
        case fifo, symlink, socket, leasedFile
    }

    /// The lowest display nothing holds: where the next start would land.
    static func nextFreeDisplay() -> Display {
        let snapshot = DisplaySnapshot.take(displays: 1...99)
        return (1...99).map(Display.init).first { snapshot.occupancy(of: $0) == .free }!
    }

    @Test(arguments: Plant.allCases)
    func aLockFilePlantedOnTheNextDisplayStallsNothing(_ plant: Plant) throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let mallory = try TestUsers.ensure("deskt-mallory")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(victor); TestUsers.reap(mallory) }
        let target = Self.nextFreeDisplay()
        let lock = target.lockPath
        // Whatever Mallory leaves holding the plant open lives until the end of the test.
        let held = Mutex<[Int32]>([])
        defer { for fd in held.withLock({ $0 }) { close(fd) }; unlink(lock) }
        signal(SIGIO, SIG_IGN)   // a lease break signals its holder: this process
        let planted = asUser(mallory) { () -> Bool in
            switch plant {
            case .fifo: return mkfifo(lock, 0o644) == 0
            case .symlink: return symlink("/etc/shadow", lock) == 0
            case .socket:
                let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                held.withLock { $0.append(fd) }
                return UnixSocketAddress(lock)!.withSockaddr { bind(fd, $0, $1) } == 0 && listen(fd, 1) == 0
            case .leasedFile:
                let fd = open(lock, O_RDONLY | O_CREAT | O_EXCL, 0o444)
                held.withLock { $0.append(fd) }
                let F_SETLEASE: Int32 = 1024
                return fd >= 0 && fcntl(fd, F_SETLEASE, Int32(F_WRLCK)) == 0
            }
        }
        try #require(planted, "could not plant a \(plant) at \(lock)")

        // deskd answers at once (a hung daemon would hit the timeout), says what it skipped,
        // and the start lands on another display.
        let list = try CommandResult.run("/usr/bin/timeout", ["10", TestEnvironment.deskctl, "list", "--all", "--socket", daemon.socket])
        #expect(list.status == 0, "list did not answer: \(list.stderr)")
        #expect(list.stdout.contains("\(target)  its lock file \(lock)"), "\(list.stdout)")
        let start = try CommandResult.run("/usr/bin/timeout", ["30", TestEnvironment.deskctl, "start", "--user", victor.name, "--json", "--socket", daemon.socket])
        #expect(start.status == 0, "\(start.stderr)")
        let session = try start.decode(Session.self)
        #expect(session.display != target)
        #expect(daemon.logText.contains("display skipped: its lock file is not an X server's"))
        #expect((try? daemon.client.send(Request(command: .ping)))?.ok == true)

        // SIGTERM still stops deskd, promptly.
        let process = try #require(daemon.process)
        kill(process.processIdentifier, SIGTERM)
        #expect(eventually(20) { !process.isRunning }, "deskd did not stop on SIGTERM")
        try daemon.launch()
        #expect(try daemon.deskctl(["kill", session.display.description]).status == 0)
    }

    @Test func killsRacingEachOtherAndANewStartNeverTouchTheNewerSession() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(victor) }
        for _ in 0..<3 {
            let first = try daemon.start(victor.name)
            let display = first.display.description
            // Two kills of the first session and a start on its display, all at once; the start
            // retries while the display is still being torn down, as a script would.
            let newer = Mutex<Session?>(nil)
            let socket = daemon.socket, name = victor.name
            let deskctl = { @Sendable (arguments: [String]) in try? CommandResult.run(TestEnvironment.deskctl, arguments + ["--socket", socket]) }
            DispatchQueue.concurrentPerform(iterations: 3) { index in
                if index < 2 {
                    _ = deskctl(["kill", display])
                    return
                }
                for _ in 0..<200 {
                    if let result = deskctl(["start", "--user", name, "--display", display, "--json"]), result.status == 0 {
                        newer.withLock { $0 = try? result.decode(Session.self) }
                        return
                    }
                    usleep(20_000)
                }
            }
            let second = try #require(newer.withLock { $0 }, "the start on \(display) never succeeded")
            #expect(second.display == first.display && second.id != first.id)
            // Whatever order the three ran in, the newer session is whole: process, directory,
            // link, record, and a probe that logs in.
            usleep(300_000)
            let listed = try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions
            if listed.contains(where: { $0.id == second.id }) {
                #expect(ProcFS.isAlive(second.pid))
                #expect(access(daemon.runtimeDirectory + "/by-id/\(second.id)/rfb.sock", F_OK) == 0)
                #expect(try FileManager.default.destinationOfSymbolicLink(atPath: daemon.runtimeDirectory + "/displays/\(second.display.number)") == "../by-id/\(second.id)")
                #expect(access(daemon.runtimeDirectory + "/sessions/\(second.id).json", F_OK) == 0)
                #expect(try daemon.deskctl(["probe", display]).status == 0)
            } else {
                // A kill that arrived after the new start took the display killed the newer session: allowed.
                #expect(!ProcFS.isAlive(second.pid) || ProcFS.process(second.pid)?.state == "Z")
            }
            #expect(access(daemon.runtimeDirectory + "/by-id/\(first.id)", F_OK) != 0)
            #expect(access(daemon.runtimeDirectory + "/sessions/\(first.id).json", F_OK) != 0)
            _ = try daemon.deskctl(["kill", "--all"])
        }
    }

    /// Session processes start with stdin, stdout and stderr only: not one descriptor of the
    /// daemon's (its control socket, its connections, another session's log) reaches a user.
    @Test func sessionProcessesHoldNoDescriptorOfTheDaemon() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let mallory = try TestUsers.ensure("deskt-mallory")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(victor); TestUsers.reap(mallory) }
        let victors = try daemon.start(victor.name)
        let mallorys = try daemon.start(mallory.name)
        let deskd = try #require(daemon.process?.processIdentifier)
        let daemonSockets = ProcFS.socketInodes(of: deskd)
        for session in [victors, mallorys] {
            let desktop = try #require(daemon.desktopPid(of: session))
            for pid in [session.pid, desktop] {
                #expect(ProcFS.socketInodes(of: pid).isDisjoint(with: daemonSockets), "pid \(pid) holds a socket of deskd's")
                let targets = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap {
                    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
                }
                let other = session.id == victors.id ? mallorys.id : victors.id
                #expect(!targets.contains { $0.contains(other) || $0.hasSuffix("deskd.sock") || $0.hasSuffix("audit.log") }, "\(targets)")
            }
        }
    }

    @Test func aNewgrpShellIsNotAnAdmin() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let mallory = try TestUsers.ensure("deskt-mallory")
        _ = try TestUsers.ensure("deskt-admin", groups: ["deskt-admins"])
        let adminGID = try #require(GroupDirectory.gid(named: "deskt-admins"))
        let daemon = try DaemonUnderTest(extraArguments: ["--admin-group", "deskt-admins"])
        defer { daemon.shutDown(); TestUsers.reap(victor); TestUsers.reap(mallory) }
        let session = try daemon.start(victor.name)
        // The kernel reports the admin group as Mallory's gid (as after `newgrp`, or from a
        // setgid program), but the account database does not list her in it.
        let socket = daemon.socket
        let seen = asUser(mallory, gid: adminGID, groups: [adminGID]) {
            (try? ControlClient(socketPath: socket).send(Request(command: .list, all: true)))?.sessions?.map(\.user)
        }
        #expect(seen == [])
        let kill = asUser(mallory, gid: adminGID, groups: [adminGID]) {
            try? ControlClient(socketPath: socket).send(Request(command: .kill, display: session.display))
        }
        #expect(kill?.error?.code == .permissionDenied)
        #expect(ProcFS.isAlive(session.pid))
    }

    @Test func whatMalloryTypesNeverReachesAnAdminsTerminalAndHerRequestsCannotFlushTheTrail() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let mallory = try TestUsers.ensure("deskt-mallory")
        let daemon = try DaemonUnderTest()
        defer { daemon.shutDown(); TestUsers.reap(victor); TestUsers.reap(mallory) }
        let session = try daemon.start(victor.name)

        // Escape sequences in the names she asks about end up in the audit trail...
        let hostile = ["\u{1B}]0;owned\u{07}", "\u{1B}[2J\u{1B}[H", "x\u{9B}31m", String(repeating: "A", count: 4000)]
        for name in hostile {
            #expect(try daemon.deskctl(["kill", "--user", name], as: mallory.name).status != 0)
            let start = try daemon.deskctl(["start", "--user", name], as: mallory.name)
            #expect(start.status != 0 && !start.stderr.contains("\u{1B}"))
        }
        // ...but an admin's `history` shows them escaped, and capped.
        let history = try daemon.deskctl(["history"])
        #expect(history.status == 0)
        #expect(!history.stdout.utf8.contains(0x1B) && !history.stdout.unicodeScalars.contains { $0.value == 0x9B })
        #expect(history.stdout.contains("\\x1b]0;owned\\x07") || history.stdout.contains("\\x1b]0;owne"))
        #expect(!daemon.auditText.contains(String(repeating: "A", count: 100)))

        // Thousands of refused requests, and of requests that succeed without changing anything
        // (`kill --all` with nothing of hers to kill, `reap --dry-run`), leave a handful of lines
        // and the entries that matter.
        let client = ControlClient(socketPath: daemon.socket)
        let sizeBefore = daemon.auditText.utf8.count
        let noOps = asUser(mallory) { () -> Int in
            var succeeded = 0
            for round in 0..<3000 {
                let request = switch round % 3 {
                case 0: Request(command: .kill, display: session.display)
                case 1: Request(command: .kill, all: true)
                default: Request(command: .reap, idleSeconds: 60, dryRun: true)
                }
                if (try? client.send(request))?.ok == true { succeeded += 1 }
            }
            return succeeded
        }
        #expect(noOps == 2000)
        let lines = daemon.auditText.split(separator: "\n")
        #expect(lines.filter { $0.contains("\"peerUID\":\(mallory.uid)") }.count <= 40)
        #expect(daemon.auditText.utf8.count - sizeBefore < 32 << 10)
        #expect(lines.contains { $0.contains("\"outcome\":\"started\"") && $0.contains(victor.name) })
        #expect(ProcFS.isAlive(session.pid))
    }

    /// With TCP on, something else answering on the session's port is named and refused: the
    /// password is not handed out. Xvnc starts late here (a wrapper waits), and Mallory binds
    /// the port in the gap, as a racing squatter would.
    @Test func aSquattedTCPPortIsNamedAndNoPasswordIsHandedOut() throws {
        let victor = try TestUsers.ensure("deskt-victor")
        let mallory = try TestUsers.ensure("deskt-mallory")
        let wrapper = "/tmp/deskt-slow-xvnc-\(getpid())"
        try "#!/bin/sh\nsleep 1\nexec /usr/bin/Xtigervnc \"$@\"\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
        chmod(wrapper, 0o755)
        let daemon = try DaemonUnderTest(config: "[network]\nlisten = \"loopback\"\n[sessions]\nxvnc = \"\(wrapper)\"\n")
        defer { daemon.shutDown(); TestUsers.reap(victor); TestUsers.reap(mallory); unlink(wrapper) }
        let display = Self.nextFreeDisplay()
        let port = display.rfbPort()

        // Mallory's fake server: it binds as soon as the start is under way and greets like Xvnc.
        let squatter = Mutex<Int32>(-1)
        defer { close(squatter.withLock { $0 }) }
        let starting = Thread {
            _ = eventually(10) { ProcFS.allPIDs().contains { (ProcFS.readText("/proc/\($0)/cmdline") ?? "").hasPrefix("/bin/sh\0\(wrapper)") } }
            let fd = asUser(mallory) { () -> Int32 in
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                let bound = InternetSocketAddress.loopback(port: port).withSockaddr { bind(fd, $0, $1) }
                return bound == 0 && listen(fd, 8) == 0 ? fd : -1
            }
            squatter.withLock { $0 = fd }
            while fd >= 0 {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                _ = Array("RFB 003.008\n".utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(client)
            }
        }
        starting.start()
        let start = try daemon.deskctl(["start", "--user", victor.name, "--display", display.description])
        let listening = squatter.withLock { $0 }
        shutdown(listening, Int32(SHUT_RDWR))
        try #require(listening >= 0, "the squatter could not bind port \(port)")
        #expect(start.status != 0)
        #expect(start.stderr.contains("TCP port \(port) is held by a socket of uid \(mallory.uid) (\(mallory.name))"), "\(start.stderr)")
        #expect(start.stderr.contains("no password"))
        #expect(!start.stdout.contains("Password"))
        #expect(try daemon.deskctl(["list", "--all", "--json"]).decode(SessionList.self).sessions.isEmpty)
        #expect(eventually { TestUsers.processes(of: victor).isEmpty })
    }
}
}
