import DeskCore
@testable import DeskJob
import DeskLinux
import DeskSessionProtocol
import Foundation
import Glibc
import Testing

/// deskd-job's own parts, beyond the display server it shares with deskd (XvncTests): what it
/// tells deskd and the user, its private directory, its environment. No Slurm and no root: the
/// whole job runs end to end in ClusterTests.
@Suite struct DeskJobTests {
    // MARK: What it tells deskd

    /// A report's message fits JobReport's 1024 bytes whatever characters fall at the cut: a
    /// character split in two used to decode as U+FFFD (3 bytes) and make 1025, which deskd drops.
    @Test(arguments: ["é", "😀", "—", "a"])
    func aLongSentenceIsCutWithinTheReportsLimitAtACharacter(tail: String) {
        for prefix in 1010...1024 {
            let sentence = String(repeating: "x", count: prefix) + String(repeating: tail, count: 40)
            let cut = DesktopJob.reportable(sentence)
            #expect(cut.utf8.count <= 1024, "\(prefix) + \(tail): \(cut.utf8.count) bytes")
            #expect(!cut.unicodeScalars.contains("\u{FFFD}") && cut.hasSuffix("…"))
            #expect(JobReport(event: .failed, message: cut).isWellFormed)
        }
        #expect(DesktopJob.reportable("short") == "short")
    }

    @Test func anEndSaysWhyAndOnlyAFailureExitsNonZero() {
        #expect(EndCause.signal(SIGTERM).message.contains("SIGTERM from Slurm") && EndCause.signal(SIGTERM).exitStatus == 0)
        #expect(EndCause.deskd.message == "deskd asked for the desktop's end." && EndCause.deskd.exitStatus == 0)
        #expect(EndCause.desktopEnded(.exited(status: 0), lastLine: nil).message.contains("logged out"))
        #expect(EndCause.desktopEnded(.exited(status: 0), lastLine: nil).exitStatus == 0)
        let crashed = EndCause.desktopEnded(.killed(signal: SIGABRT, name: "Aborted"), lastLine: "gnome-session: Failed to start")
        #expect(crashed.exitStatus == 1 && crashed.message.hasSuffix("; its output ends: gnome-session: Failed to start."))
        #expect(EndCause.xvncEnded(.exited(status: 1)).exitStatus == 1)
    }

    // MARK: What it tells the user

    @Test func theTimeWarningSaysRoughlyHowLongAndWhen() {
        setenv("TZ", "UTC", 1)
        tzset()
        let nine = time_t(1_700_000_000 - 1_700_000_000 % 86_400 + 9 * 3600)   // 09:00 UTC
        #expect(TimeWarning.text(warnSeconds: 300, now: nine).contains("in about 5 minutes (at 09:05)"))
        #expect(TimeWarning.text(warnSeconds: 29, now: nine).contains("in about 1 minute (at 09:00)"))
        #expect(TimeWarning.text(warnSeconds: 90, now: nine).contains("in about 2 minutes"))
        #expect(TimeWarning.arguments(program: "/usr/bin/xmessage", text: "t") == ["/usr/bin/xmessage", "-center", "-title", "deskd: time nearly up", "t"])
    }

    // MARK: Its directory

    @Test func theDirectoryIsFreshAndPrivateAndItsFilesHaveExactModes() throws {
        let old = umask(0)
        defer { umask(old) }
        let directory = try PrivateDirectory.make(temporaryDirectory: nil)
        defer { directory.remove() }
        #expect(directory.path.hasPrefix("/tmp/deskd-job-"))
        var info = stat()
        #expect(lstat(directory.path, &info) == 0 && info.st_mode & 0o777 == 0o700 && info.st_uid == getuid())
        try directory.write(PrivateDirectory.passwordName, [1, 2, 3, 4, 5, 6, 7, 8], mode: 0o600)
        #expect(stat(directory.passwordFile, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_size == 8)
        // Never over a file of its own unless asked (the cookie, on a retry, is).
        #expect(throws: JobFailure.self) { try directory.write(PrivateDirectory.passwordName, [0], mode: 0o600) }
        try directory.write(PrivateDirectory.passwordName, [0], mode: 0o600, replacing: true)
        #expect(stat(directory.passwordFile, &info) == 0 && info.st_size == 1)
    }

    @Test func aTMPDIRThatIsNoDirectoryOrTooDeepForTheSocketIsPassedOver() throws {
        let notADirectory = try PrivateDirectory.make(temporaryDirectory: "/etc/hostname")
        defer { notADirectory.remove() }
        #expect(notADirectory.path.hasPrefix("/tmp/deskd-job-"))
        let relative = try PrivateDirectory.make(temporaryDirectory: "tmp")
        defer { relative.remove() }
        #expect(relative.path.hasPrefix("/tmp/deskd-job-"))
        let deep = FileManager.default.temporaryDirectory.appendingPathComponent(String(repeating: "d", count: 90)).path
        try FileManager.default.createDirectory(atPath: deep, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: deep) }
        let fallback = try PrivateDirectory.make(temporaryDirectory: deep)
        defer { fallback.remove() }
        #expect(fallback.path.hasPrefix("/tmp/deskd-job-") && fallback.rfbSocket.utf8.count <= PrivateDirectory.socketPathLimit)
        // A path a compositor's startup command or a D-Bus address would read otherwise.
        for odd in ["scratch dir", "a,b", "p%41"] {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(odd).path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let passedOver = try PrivateDirectory.make(temporaryDirectory: path)
            defer { passedOver.remove() }
            #expect(passedOver.path.hasPrefix("/tmp/deskd-job-"), "\(odd): \(passedOver.path)")
        }
        let plain = FileManager.default.temporaryDirectory.appendingPathComponent("job_42.scratch-dir").path
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: plain) }
        let kept = try PrivateDirectory.make(temporaryDirectory: plain)
        defer { kept.remove() }
        #expect(kept.path.hasPrefix(plain + "/deskd-job-"))
    }

    /// Removing the directory removes what is in it, and never what a link in it points at.
    @Test func removalFollowsNoLink() throws {
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-job-outside-\(getpid())").path
        _ = FileManager.default.createFile(atPath: outside, contents: Data("keep".utf8))
        defer { unlink(outside) }
        let directory = try PrivateDirectory.make(temporaryDirectory: nil)
        #expect(symlink(outside, directory.path + "/link") == 0)
        try directory.write(PrivateDirectory.xstartupName, Array("#!/bin/sh\n".utf8), mode: 0o700)
        directory.remove()
        var info = stat()
        #expect(lstat(directory.path, &info) != 0, "the directory is still there")
        #expect((try? String(contentsOfFile: outside, encoding: .utf8)) == "keep")
    }

    // MARK: Its environment

    @Test func theDesktopsEnvironmentIsMadeFromTheAccountAndTheDisplayServer() throws {
        let account = try #require(UserAccount.withUID(getuid()))
        let environment = DesktopEnvironment(account: account, sessionID: "s-1")
        let needs = DisplayServerNeeds(display: Display(7), xauthority: "/tmp/deskd-job-x/Xauthority", passwordFile: "/tmp/deskd-job-x/passwd",
                                       rfbSocket: "/tmp/deskd-job-x/rfb.sock", geometry: .default, depth: 24, title: "t")
        let client = environment.client(of: Xvnc(executable: "/usr/bin/Xtigervnc"), needs)
        #expect(client.contains("DISPLAY=:7") && client.contains("XAUTHORITY=/tmp/deskd-job-x/Xauthority") && client.contains("XDG_SESSION_TYPE=x11"))
        #expect(client.contains("HOME=\(account.home)") && client.contains("\(ProcessSweep.markerKey)=s-1"))
        #expect(client.contains { $0.hasPrefix("LANG=") } && !environment.server.contains { $0.hasPrefix("DISPLAY=") })
        #expect(DesktopEnvironment.find("sh") == "/usr/bin/sh" || DesktopEnvironment.find("sh") == "/bin/sh")
    }

    /// A Wayland desktop's compositor makes its sockets in the private directory (its
    /// XDG_RUNTIME_DIR) and its programs look for them there; Xvnc gets no such variable.
    @Test func aWaylandDesktopsRuntimeDirectoryIsThePrivateOne() throws {
        let account = try #require(UserAccount.withUID(getuid()))
        let environment = DesktopEnvironment(account: account, sessionID: "s-1")
        let needs = DisplayServerNeeds(display: Display(0), directory: "/tmp/deskd-job-w", xauthority: "/tmp/deskd-job-w/Xauthority",
                                       passwordFile: "/tmp/deskd-job-w/passwd", rfbSocket: "/tmp/deskd-job-w/rfb.sock", geometry: .default, depth: 24, title: "t")
        let sway = WaylandVNC(compositor: .sway)
        #expect(environment.server(of: sway, needs).contains("XDG_RUNTIME_DIR=/tmp/deskd-job-w"))
        let client = environment.client(of: sway, needs)
        #expect(client.contains("XDG_RUNTIME_DIR=/tmp/deskd-job-w") && client.contains("XDG_SESSION_TYPE=wayland") && !client.contains { $0.hasPrefix("DISPLAY=") })
        #expect(!environment.server(of: Xvnc(executable: "/usr/bin/Xtigervnc"), needs).contains { $0.hasPrefix("XDG_RUNTIME_DIR=") })
    }
}
