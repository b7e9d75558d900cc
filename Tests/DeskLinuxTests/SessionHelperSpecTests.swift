import DeskCore
@testable import DeskHost
import DeskLinux
import DeskSessionProtocol
import Glibc
import Testing

/// What deskd hands deskd-session on its stdin: NUL-separated keys and values ended by
/// `start`, taken apart here by hand, so that the bytes themselves are pinned (the round trip
/// through the shared decoder is in DeskSessionProtocolTests).
@Suite struct SessionHelperSpecTests {
    static let account = UserAccount(name: "alice", uid: 1001, gid: 1002, home: "/home/alice smith", shell: "/bin/bash", groups: [1002, 27])

    static func spec(cgroup: SessionCGroup? = SessionCGroup(path: "/sys/fs/cgroup/deskd.service/deskd-sessions/s1"),
                     environment: [String: String] = ["PATH": "/usr/bin:/bin", "DISPLAY": ":7", "DESKD_SESSION": "s1"],
                     desktop: [String] = ["/bin/sh", "/run/deskd/by-id/s1/xstartup"]) -> SessionHelper.Spec {
        SessionHelper.Spec(
            account: account, display: Display(7), sessionID: "s1", logDirectory: "/var/lib/deskd/logs/alice/s1", logLimit: 1 << 20,
            journal: true, cgroup: cgroup, server: ["/usr/bin/Xvnc", ":7", "-geometry", "1280x800"], serverUmask: 0o077,
            desktop: desktop, environment: environment)
    }

    /// The pairs before `start`, and whether `start` ended them with nothing after it.
    static func decode(_ bytes: [UInt8]) -> (pairs: [(String, String)], ended: Bool) {
        var fields = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard fields.last == "" else { return ([], false) }   // every field ends with a NUL
        fields.removeLast()
        var pairs: [(String, String)] = []
        var index = 0
        while index + 1 < fields.count {
            pairs.append((fields[index], fields[index + 1]))
            index += 2
        }
        return (pairs, index == fields.count - 1 && fields[index] == "start")
    }

    @Test func everyFieldIsAKeyAndAValueEndedByStart() throws {
        let (pairs, ended) = Self.decode(try Self.spec().message.encoded())
        #expect(ended)
        #expect(pairs.map { "\($0.0)=\($0.1)" } == [
            "user=alice", "uid=1001", "gid=1002", "home=/home/alice smith", "display=:7", "session-id=s1",
            "log-directory=/var/lib/deskd/logs/alice/s1", "log-limit=1048576", "journal=1", "server-umask=77",
            "cgroup=/sys/fs/cgroup/deskd.service/deskd-sessions/s1",
            "server=/usr/bin/Xvnc", "server=:7", "server=-geometry", "server=1280x800",
            "desktop=/bin/sh", "desktop=/run/deskd/by-id/s1/xstartup",
            // Sorted by key, so the same spec is always the same bytes.
            "env=DESKD_SESSION=s1", "env=DISPLAY=:7", "env=PATH=/usr/bin:/bin",
        ])
    }

    @Test func noCGroupIsNoKeyAndAnEmptyValueIsStillAField() throws {
        let (pairs, ended) = Self.decode(try Self.spec(cgroup: nil, environment: ["EMPTY": ""], desktop: ["", "x"]).message.encoded())
        #expect(ended && !pairs.contains { $0.0 == "cgroup" })
        #expect(pairs.suffix(3).map { "\($0.0)=\($0.1)" } == ["desktop=", "desktop=x", "env=EMPTY="])
    }

    /// A NUL in a value would end it early and make what follows a key of its own ("uid", say):
    /// such a spec is not encoded, and the helper is not even started.
    @Test func aNULInAValueCannotForgeAKey() throws {
        #expect(throws: SessionSpec.Failure.bad("a NUL in a value of desktop")) { try Self.spec(desktop: ["/bin/sh\0uid\0" + "0"]).message.encoded() }
        #expect(throws: SessionSpec.Failure.bad("a NUL in a value of env")) { try Self.spec(environment: ["A": "1\0start\0"]).message.encoded() }
        #expect(throws: SessionSpec.Failure.bad("a NUL in a value of env")) { try Self.spec(environment: ["A\0cgroup": "/"]).message.encoded() }
        let missing = "/nonexistent/deskd-session"
        #expect(throws: OSError.self) { _ = try SessionHelper.start(Self.spec(desktop: ["a\0b"]), helper: missing, stderr: -1) }
        do {
            _ = try SessionHelper.start(Self.spec(desktop: ["a\0b"]), helper: missing, stderr: -1)
        } catch {
            #expect(error.errno == EINVAL && error.path == missing && error.description.contains("a NUL in a value of desktop"), "\(error)")
        }
    }

    // MARK: SessionLauncher's setpriv arguments

    @Test func credentialsDropGroupsGidAndUidBeforeTheProgram() {
        #expect(SessionLauncher.credentialArguments(for: Self.account) == ["--reuid", "1001", "--regid", "1002", "--groups", "1002,27", "--"])
        let groupless = UserAccount(name: "b", uid: 2000, gid: 2000, home: "/", shell: "/bin/sh", groups: [])
        #expect(SessionLauncher.credentialArguments(for: groupless) == ["--reuid", "2000", "--regid", "2000", "--clear-groups", "--"])
    }

    /// The program follows "--", so a program or argument that starts with a dash is never
    /// read as one of setpriv's options.
    @Test func theProgramAndItsArgumentsFollowTheCredentials() {
        let spec = SessionLauncher.Spec(executable: "/usr/bin/Xtigervnc", arguments: [":9", "--reuid", "0"], account: Self.account,
                                        environment: [:], logFD: -1, cgroup: nil)
        let argv = SessionLauncher.argumentVector(spec)
        #expect(argv.first == SessionLauncher.setprivPath)
        let dashes = argv.firstIndex(of: "--")
        #expect(dashes.map { Array(argv[($0 + 1)...]) } == ["/usr/bin/Xtigervnc", ":9", "--reuid", "0"])
        #expect(dashes.map { Array(argv[1..<$0]) } == ["--reuid", "1001", "--regid", "1002", "--groups", "1002,27"])
    }
}

/// deskd passes its own stderr on to deskd-session when that is the journal (under systemd,
/// fd 2 is the journal stream): the spawn must hand the helper that very descriptor as its fd 2,
/// not refuse it as one of 0-2 (every `deskctl start` failed under deskd.service that way).
@Suite struct SessionHelperStdioTests {
    @Test func theHelperGetsDeskdsOwnStderrAsItsStderr() throws {
        let directory = "/tmp/deskd-stdio-\(getpid())"
        mkdir(directory, 0o700)
        defer { unlink(directory + "/helper"); rmdir(directory) }
        // A stand-in for deskd-session that says, as its start reply, what its fds 0-2 are. It
        // waits for the spec's first byte (its one write is then done): a helper gone before
        // deskd wrote it would fail the start with a broken pipe, as a loaded CI machine showed.
        let script = "#!/bin/sh\n/usr/bin/head -c 1 >/dev/null\necho \"failed $(/usr/bin/readlink /proc/self/fd/0) $(/usr/bin/readlink /proc/self/fd/1) $(/usr/bin/readlink /proc/self/fd/2)\"\n"
        let fd = open(directory + "/helper", O_WRONLY | O_CREAT | O_EXCL, 0o700)
        try #require(fd >= 0)
        _ = script.withCString { write(fd, $0, strlen($0)) }
        close(fd)

        let helper = try SessionHelper.start(SessionHelperSpecTests.spec(), helper: directory + "/helper", stderr: STDERR_FILENO)
        let reply = helper.awaitStart(until: .now + .seconds(10))
        waitpid(helper.pid, nil, 0)
        var buffer = [CChar](repeating: 0, count: 256)
        let length = readlink("/proc/self/fd/2", &buffer, buffer.count - 1)
        try #require(length > 0)
        let ours = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard case .failed(let fds) = reply else { Issue.record("the helper did not report its descriptors: \(reply)"); return }
        let links = fds.split(separator: " ").map(String.init)
        #expect(links.count == 3, "\(fds)")
        #expect(links.first?.hasPrefix("pipe:") == true, "stdin is the spec pipe: \(fds)")
        #expect(links.dropFirst().first?.hasPrefix("pipe:") == true, "stdout is the reply pipe: \(fds)")
        #expect(links.last == ours, "stderr is deskd's own: \(fds) vs \(ours)")
    }
}
