import DeskCore
import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// deskd-web, the web front: the gateway and the metrics endpoint run in a process of their own,
/// as web.user, and reach deskd only through the front socket. These tests play a taken-over
/// front and the other users of the host against it.
extension EndToEnd {
@Suite(.enabled(if: TestEnvironment.canRun && UserAccount.named("deskd-web") != nil,
                "needs root, Xtigervnc and the deskd-web account (scripts/install-deps makes it)"))
struct WebFrontTests {
    static let intruder = TestEnvironment.repository.appendingPathComponent("Tests/web/front_intruder.py").path

    static func daemonWithGateway() throws -> (DaemonUnderTest, port: Int) {
        let port = try #require(InternetSocketAddress.freeLoopbackPort())
        let daemon = try DaemonUnderTest(config: "[web]\nlisten = \"127.0.0.1:\(port)\"\n")
        return (daemon, port)
    }

    /// The front deskd started for `daemon`: the process whose executable is deskd-web and whose
    /// front socket is the daemon's.
    static func front(of daemon: DaemonUnderTest) -> pid_t? {
        ProcFS.allPIDs().first { pid in
            ProcFS.isAlive(pid) && ProcFS.executable(of: pid)?.hasSuffix("/deskd-web") == true
                && (ProcFS.read("/proc/\(pid)/cmdline").map { String(decoding: $0, as: UTF8.self) } ?? "").contains(daemon.runtimeDirectory + "/web.sock")
        }
    }

    static func status(of pid: pid_t) -> [String: String] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    @Test func theFrontRunsAsItsOwnUnprivilegedAccountAndOnlyItMayOpenTheFrontSocket() throws {
        let web = try #require(UserAccount.named("deskd-web"))
        let (daemon, _) = try Self.daemonWithGateway()
        defer { daemon.shutDown() }
        var front: pid_t?
        #expect(eventually(10) { front = Self.front(of: daemon); return front != nil }, "no deskd-web runs for this deskd:\n\(daemon.logText)")
        let pid = try #require(front)
        let status = Self.status(of: pid)
        print("WebFrontTests: deskd-web pid \(pid): Uid \(status["Uid"] ?? "?"), Groups '\(status["Groups"] ?? "?")', NoNewPrivs \(status["NoNewPrivs"] ?? "?"), CapEff \(status["CapEff"] ?? "?"), CapBnd \(status["CapBnd"] ?? "?")")
        // Real, effective, saved and filesystem uid: all deskd-web's; no groups; no privilege, now or later.
        #expect(status["Uid"]?.split(separator: "\t").allSatisfy { $0 == "\(web.uid)" } == true)
        #expect(status["Gid"]?.split(separator: "\t").allSatisfy { $0 == "\(web.gid)" } == true)
        #expect(status["Groups"] == "")
        #expect(status["NoNewPrivs"] == "1")
        #expect(status["CapEff"] == "0000000000000000" && status["CapPrm"] == "0000000000000000" && status["CapBnd"] == "0000000000000000")
        // `ps` says the same.
        let ps = try CommandResult.run("/usr/bin/ps", ["-o", "user:20=,comm=", "-p", "\(pid)"])
        #expect(ps.stdout.split(separator: " ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } == ["deskd-web", "deskd-web"], "ps: \(ps.stdout)")

        // The front socket is deskd-web's, 0600: another user cannot even connect.
        let socketPath = daemon.runtimeDirectory + "/web.sock"
        var info = stat()
        try #require(lstat(socketPath, &info) == 0)
        #expect(info.st_uid == web.uid && info.st_mode & 0o777 == 0o600)
        let other = try TestUsers.ensure("deskt-quinn")
        let connect = "import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\ntry:\n s.connect(sys.argv[1]); print('connected')\nexcept OSError as e: print(e.strerror)\n"
        let attempt = try CommandResult.run("/usr/sbin/runuser", ["-u", other.name, "--", "/usr/bin/python3", "-c", connect, socketPath])
        #expect(attempt.stdout == "Permission denied\n", "another user on the front socket: \(attempt.stdout)\(attempt.stderr)")
        // Root gets past the mode, but deskd answers only web.user's uid: the connection is closed unanswered.
        let asRoot = try CommandResult.run("/usr/bin/python3", ["-c", connect + "s.settimeout(5)\nprint(len(s.recv(65536)))\n", socketPath])
        #expect(asRoot.stdout == "connected\n0\n", "root on the front socket: \(asRoot.stdout)\(asRoot.stderr)")

        // The front goes with deskd, and deskd starts it again if it dies.
        kill(pid, SIGKILL)
        var replacement: pid_t?
        #expect(eventually(10) { replacement = Self.front(of: daemon); return replacement != nil && replacement != pid }, "deskd did not start deskd-web again")
        daemon.shutDown()
        #expect(eventually(5) { replacement.map { !ProcFS.isAlive($0) } ?? true }, "deskd-web outlived deskd")
    }

    @Test func aTakenOverFrontGetsADesktopOnlyForALiveLinkAndOnlyOnce() throws {
        let owner = try TestUsers.ensure("deskt-rhea")
        let (daemon, _) = try Self.daemonWithGateway()
        defer { daemon.shutDown(); TestUsers.reap(owner) }
        let session = try daemon.start(owner.name)
        let link = try daemon.deskctl(["url", session.display.description, "--json"], as: owner.name).decode(BrowserLink.self)
        let token = try #require(link.url.split(separator: "#token=").last.map(String.init))

        // The intruder is deskd-web's account (its uid is all deskd checks): what a front that
        // has been taken over can do, with the live link's token as if a browser had brought it.
        let run = try CommandResult.run(SessionLauncher.setprivPath, [
            "--reuid=deskd-web", "--regid=deskd-web", "--clear-groups", "--", "/usr/bin/python3", Self.intruder,
            daemon.runtimeDirectory + "/web.sock", token,
        ])
        print("WebFrontTests: taken-over front → \(run.stdout)\(run.stderr)")
        try #require(run.status == 0, "the intruder failed: \(run.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(result["madeUpToken"] is NSNull, "a made-up token was traded")
        #expect(result["madeUpCookie"] is NSNull, "a made-up cookie was redeemed")
        #expect(result["madeUpCookieSockets"] as? Int == 0, "a desktop for a made-up cookie")
        #expect(result["connectByNumber"] as? String == "closed", "a desktop asked for by relay number was answered")
        #expect(result["liveTokenGaveACookie"] as? Bool == true)
        #expect(result["liveTokenTwice"] is NSNull, "a token traded twice")
        #expect(result["cookieTwice"] is NSNull, "a cookie spent twice")
        #expect(result["desktopSocket"] as? Int == 1, "no desktop socket for the live link: \(result)")
        // The socket is past VNC authentication: the front sends ClientInit and Xvnc answers with
        // the desktop, though the front never held the password.
        let serverInit = try #require(result["serverInit"] as? [String: Any])
        #expect(serverInit["width"] as? Int == 1920 && (serverInit["name"] as? String)?.contains(owner.name) == true, "\(serverInit)")
        #expect(result["desktopTwice"] as? Int == 0, "one cookie opened the desktop twice")
        #expect(result["afterGarbage"] as? String == "closed")
        #expect(result["afterHugeCounts"] as? String == "closed")
        #expect(result["afterMadeUpListener"] as? String == "closed")
        #expect(result["servedAfterGarbage"] as? Bool == true)
        // deskd serves on, and says why it cut the intruder off.
        #expect(try daemon.deskctl(["list"]).status == 0)
        #expect(daemon.logText.contains("web front cut off: it sent something that is not a request"))
        #expect(result["grant"] is [String: Any] && result["refusal"] is NSNull, "\(result)")
        #expect(daemon.logText.contains("web front cut off: its counts are out of range"))
        #expect(daemon.logText.contains("web front cut off: it named a listener deskd never passed it"))
        // No made-up listener reached status.
        #expect(!(try daemon.deskctl(["status"]).stdout.contains("xxxx")))
        // The password never crossed the front socket: it is in no record the intruder saw.
        #expect(!run.stdout.contains(session.password ?? "-no-password-"))
    }
}
}
