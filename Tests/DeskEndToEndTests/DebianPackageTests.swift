import DeskClient
import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// The .deb (scripts/make-deb, which `make deb` runs on a release build; here on the test
/// build) installs into the live system with dpkg, its deskd serves from where the package put
/// it and starts a desktop through the packaged deskd-session, an edited configuration survives
/// removal, and `dpkg -r` leaves no file of the package. Skipped where deskd is installed already
/// or /etc/deskd exists: the test never touches an admin's installation.
extension EndToEnd {
@Suite struct DebianPackageTests {
    static let installedElsewhere = access("/etc/deskd", F_OK) == 0
        || ((try? CommandResult.run("/usr/bin/dpkg-query", ["-W", "-f=${Status}", "deskd"]).stdout.contains("installed")) ?? false)

    static func dpkg(_ arguments: [String]) throws -> CommandResult {
        try CommandResult.run("/usr/bin/dpkg", arguments)
    }

    @Test(.enabled(if: !installedElsewhere, "deskd is installed on this host (or /etc/deskd exists); the package test leaves it alone"))
    func thePackageInstallsServesAndRemovesWithoutATrace() throws {
        let work = "/tmp/deskt-deb-\(getpid())"
        let amy = try TestUsers.ensure("deskt-amy")
        let groupExisted = GroupDirectory.gid(named: "deskd-admin") != nil
        let pamBefore = ProcFS.read("/etc/pam.d/deskd", limit: 1 << 16)
        var daemon: Process?
        defer {
            if let daemon, daemon.isRunning {
                _ = try? ControlClient(socketPath: work + "/deskd.sock").send(Request(command: .kill, all: true))
                daemon.terminate()
                daemon.waitUntilExit()
            }
            _ = try? Self.dpkg(["--purge", "deskd"])
            // The other tests log in through /etc/pam.d/deskd: it is as it was, whatever failed.
            if let pamBefore, ProcFS.read("/etc/pam.d/deskd", limit: 1 << 16) != pamBefore {
                _ = FileManager.default.createFile(atPath: "/etc/pam.d/deskd", contents: Data(pamBefore), attributes: [.posixPermissions: 0o644])
            }
            if !groupExisted { _ = try? TestUsers.run("/usr/sbin/groupdel", ["deskd-admin"]) }
            TestUsers.reap(amy)
            try? FileManager.default.removeItem(atPath: work)
        }

        let build = try CommandResult.run(TestEnvironment.repository.appendingPathComponent("scripts/make-deb").path,
                                          [TestEnvironment.products.path, work])
        #expect(build.status == 0, "\(build.stderr)")
        let package = build.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let control = try CommandResult.run("/usr/bin/dpkg-deb", ["--field", package, "Depends"]).stdout
        for dependency in ["tigervnc-standalone-server", "xauth", "util-linux", "libpam-modules", "libpam0g"] {
            #expect(control.contains(dependency), "Depends: \(control)")
        }

        let install = try Self.dpkg(["--install", package])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        let files = try Self.dpkg(["--listfiles", "deskd"]).stdout.split(separator: "\n").map(String.init).filter { path in
            var info = stat()
            return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        }
        for path in ["/usr/sbin/deskd", "/usr/bin/deskctl", "/usr/libexec/deskd/deskd-session", "/usr/lib/systemd/system/deskd.service",
                     "/usr/lib/sysusers.d/deskd.conf", "/usr/lib/tmpfiles.d/deskd.conf", "/usr/share/man/man1/deskctl.1.gz",
                     "/usr/share/man/man5/deskd.toml.5.gz", "/usr/share/man/man8/deskd.8.gz", "/usr/share/bash-completion/completions/deskctl",
                     "/usr/share/deskd/templates/xterm.xstartup", "/usr/share/doc/deskd/deskd.toml.example"] {
            #expect(files.contains(path), "the package lacks \(path)")
        }
        // postinst made the group and the directories, and placed the configuration; a PAM file
        // that was already there is left as it was.
        #expect(GroupDirectory.gid(named: "deskd-admin") != nil)
        #expect(FileManager.default.fileExists(atPath: "/etc/deskd/deskd.toml") && FileManager.default.fileExists(atPath: "/etc/deskd/templates"))
        #expect(ProcFS.read("/etc/pam.d/deskd", limit: 1 << 16) == pamBefore ?? ProcFS.read("/usr/share/deskd/deskd.pam", limit: 1 << 16))

        // The installed deskd reads the installed configuration, finds its deskd-session and
        // templates where the package put them, and answers the installed deskctl.
        let check = try CommandResult.run("/usr/sbin/deskd", ["--check-config"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/deskd")
        process.arguments = ["--socket", work + "/deskd.sock", "--runtime-dir", work + "/run", "--state-dir", work + "/state"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        daemon = process
        let deskctl = { (arguments: [String]) throws -> CommandResult in
            try CommandResult.run("/usr/bin/deskctl", arguments + ["--socket", work + "/deskd.sock"])
        }
        #expect(eventually(10) { (try? deskctl(["status"]))?.status == 0 })
        let status = try deskctl(["status"])
        #expect(status.stdout.contains("deskd ") && status.stdout.contains("/etc/deskd/deskd.toml"), "\(status.stdout)\(status.stderr)")
        let started = try deskctl(["start", "--user", amy.name, "--json"])
        #expect(started.status == 0, "\(started.stderr)")
        let session = try started.decode(Session.self)
        #expect(ProcFS.isAlive(session.pid))
        #expect(try deskctl(["kill", session.display.description]).status == 0)
        process.terminate()
        process.waitUntilExit()

        // An edited configuration outlives dpkg -r; everything else of the package goes.
        let edited = "# an admin's edit\n[limits]\nmax_sessions_per_user = 2\n"
        try edited.write(toFile: "/etc/deskd/deskd.toml", atomically: true, encoding: .utf8)
        let remove = try Self.dpkg(["--remove", "deskd"])
        #expect(remove.status == 0, "\(remove.stdout)\(remove.stderr)")
        for path in files { #expect(access(path, F_OK) != 0, "\(path) is left after dpkg -r") }
        #expect(access("/usr/libexec/deskd", F_OK) != 0 && access("/usr/share/deskd", F_OK) != 0)
        #expect((try? String(contentsOfFile: "/etc/deskd/deskd.toml", encoding: .utf8)) == edited)
        #expect(ProcFS.read("/etc/pam.d/deskd", limit: 1 << 16) == pamBefore)

        // Purge takes the admin's edited files too, but never a file that was there before.
        #expect(try Self.dpkg(["--purge", "deskd"]).status == 0)
        #expect(access("/etc/deskd", F_OK) != 0)
        #expect(access("/var/lib/deskd", F_OK) != 0)
        #expect(ProcFS.read("/etc/pam.d/deskd", limit: 1 << 16) == pamBefore)

        // A host that had its own /etc/deskd/deskd.toml (from make install, say): postinst keeps
        // it and says so, and neither remove nor purge touches it or the admin's templates.
        try FileManager.default.createDirectory(atPath: "/etc/deskd/templates", withIntermediateDirectories: true)
        try edited.write(toFile: "/etc/deskd/deskd.toml", atomically: true, encoding: .utf8)
        try "#!/bin/sh\nexec xterm\n".write(toFile: "/etc/deskd/templates/mine.xstartup", atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: "/etc/deskd") }
        let again = try Self.dpkg(["--install", package])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stderr.contains("keeping your /etc/deskd/deskd.toml"), "\(again.stderr)")
        #expect(try Self.dpkg(["--purge", "deskd"]).status == 0)
        #expect((try? String(contentsOfFile: "/etc/deskd/deskd.toml", encoding: .utf8)) == edited)
        #expect(access("/etc/deskd/templates/mine.xstartup", F_OK) == 0)
    }
}
}
