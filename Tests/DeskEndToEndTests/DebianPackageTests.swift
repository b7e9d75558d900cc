import DeskCore
import Foundation
import Glibc
import Testing
import TestSupport

/// The Debian package as dpkg-buildpackage makes it (scripts/make-deb; debian/): lintian finds no
/// error in it, its conffiles are the configuration and the PAM files and nothing else, it holds
/// every file in its place with its mode, its maintainer scripts enable, start and restart what
/// they should, and it depends on what deskd runs. Nothing is installed into this host (a booted
/// container installs it). Needs no root: the package builds with Rules-Requires-Root: no.
///
/// DESKD_DEB=/path/to/deskd_VERSION_ARCH.deb tests that package instead of building one (CI
/// can build once with scripts/make-deb). Building takes a release build of the three binaries.
@Suite(.enabled(if: DebianPackage.canRun, DebianPackage.skipReason))
struct DebianPackageTests {
    @Test func lintianFindsNoError() async throws {
        try await withTaskExecutorPreference(DebianPackage.thread) {
            let deb = try await DebianPackage.deb()
            let lintian = try await DebianPackage.runInBackground("/usr/bin/lintian", ["--pedantic", "--display-info", deb])
            // Everything it says is printed; debian/deskd.lintian-overrides says why each override is there.
            print("lintian --pedantic --display-info \(deb):\n\(lintian.stdout.isEmpty ? "(nothing)\n" : lintian.stdout)")
            #expect(!lintian.stdout.split(separator: "\n").contains { $0.hasPrefix("E: ") }, "lintian reports errors:\n\(lintian.stdout)")
            #expect(lintian.status == 0, "lintian exit \(lintian.status): \(lintian.stdout)\(lintian.stderr)")
        }
    }

    /// dpkg keeps, diffs or takes the maintainer's version of exactly these on upgrade, and removes
    /// them on purge; nothing else in /etc is a file.
    @Test func theConffilesAreTheConfigurationAndThePAMFile() async throws {
        try await withTaskExecutorPreference(DebianPackage.thread) {
            let deb = try await DebianPackage.deb()
            let listed = try DebianPackage.sh("dpkg-deb --info \"$1\" conffiles", deb)
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.stdout.split(separator: "\n").map(String.init).sorted() == ["/etc/deskd/deskd.toml", "/etc/pam.d/deskd", "/etc/pam.d/deskd-web"])
            let underEtc = try DebianPackage.contents(deb).filter { $0.key.hasPrefix("/etc/") }
            #expect(underEtc.filter { !$0.value.hasPrefix("d") }.keys.sorted() == ["/etc/deskd/deskd.toml", "/etc/pam.d/deskd", "/etc/pam.d/deskd-web"])
            // The admin's template directory, shipped empty.
            #expect(underEtc["/etc/deskd/templates"]?.hasPrefix("drwxr-xr-x") == true)
            #expect(try DebianPackage.data(deb, "/etc/pam.d/deskd").contains("@include common-session"))
            #expect(try DebianPackage.data(deb, "/etc/pam.d/deskd-web").contains("@include common-auth"))
        }
    }

    @Test func everyFileIsInItsPlaceWithItsMode() async throws {
        try await withTaskExecutorPreference(DebianPackage.thread) {
            let deb = try await DebianPackage.deb()
            let entries = try DebianPackage.contents(deb)
            let executables = ["/usr/sbin/deskd", "/usr/bin/deskctl", "/usr/libexec/deskd/deskd-session", "/usr/libexec/deskd/deskd-job", "/usr/libexec/deskd/deskd-web", "/usr/libexec/deskd/deskd-auth", "/usr/libexec/deskd/deskd-files"]
                + ["auto", "gnome", "kde", "labwc", "lxqt", "mate", "openbox", "sway", "xfce", "xfce-wayland", "xterm"].map { "/usr/share/deskd/templates/\($0).xstartup" }
            for path in executables {
                #expect(entries[path] == "-rwxr-xr-x", "\(path): \(entries[path] ?? "missing")")
            }
            let files = ["deskd.service", "deskd-web.service", "deskd-reap.service", "deskd-reap.timer"].map { "/usr/lib/systemd/system/\($0)" }
                + ["/usr/lib/sysusers.d/deskd.conf", "/usr/lib/tmpfiles.d/deskd.conf",
                   "/usr/share/man/man1/deskctl.1.gz", "/usr/share/man/man5/deskd.toml.5.gz", "/usr/share/man/man8/deskd.8.gz",
                   "/usr/share/bash-completion/completions/deskctl", "/usr/share/bash-completion/completions/deskd",
                   "/usr/share/zsh/site-functions/_deskctl", "/usr/share/zsh/site-functions/_deskd",
                   "/usr/share/fish/vendor_completions.d/deskctl.fish", "/usr/share/fish/vendor_completions.d/deskd.fish",
                   "/usr/share/doc/deskd/copyright", "/usr/share/doc/deskd/changelog.gz",
                   // Named so by the man pages: not compressed.
                   "/usr/share/doc/deskd/deskd.toml.example", "/usr/share/doc/deskd/PROTOCOL.md"]
            for path in files {
                #expect(entries[path] == "-rw-r--r--", "\(path): \(entries[path] ?? "missing")")
            }
            // Units in /usr/lib only (nothing in /lib), naming the binaries where the package puts them.
            #expect(!entries.keys.contains { $0 == "/lib" || $0.hasPrefix("/lib/") })
            let unit = try DebianPackage.data(deb, "/usr/lib/systemd/system/deskd.service")
            #expect(unit.contains("ExecStart=/usr/sbin/deskd --web-front external\n") && unit.contains("KillMode=process"), "\(unit)")
            let front = try DebianPackage.data(deb, "/usr/lib/systemd/system/deskd-web.service")
            #expect(front.contains("ExecStart=/usr/libexec/deskd/deskd-web --socket /run/deskd/web.sock\n") && front.contains("User=deskd-web"), "\(front)")
            #expect(try DebianPackage.data(deb, "/usr/lib/systemd/system/deskd-reap.service").contains("ExecStart=/usr/bin/deskctl reap"))
            // bash-completion sources its files: no #! line.
            let completion = try DebianPackage.data(deb, "/usr/share/bash-completion/completions/deskctl")
            #expect(!completion.hasPrefix("#!") && completion.contains("--view-only"))
        }
    }

    @Test func itDependsOnWhatDeskdRuns() async throws {
        try await withTaskExecutorPreference(DebianPackage.thread) {
            let deb = try await DebianPackage.deb()
            let fields = try CommandResult.run("/usr/bin/dpkg-deb", ["--field", deb, "Package", "Version", "Depends"]).stdout
            #expect(fields.contains("Version: \(DeskVersion.current)\n"), "\(fields)")
            let depends = (fields.components(separatedBy: "Depends: ").last ?? "")
                .split(separator: ",").map { $0.trimming().split(separator: " ").first.map(String.init) ?? "" }
            for package in ["libc6", "libpam0g", "libpam-modules", "libpam-runtime", "passwd", "procps", "tigervnc-standalone-server", "xauth", "systemd"] {
                #expect(depends.contains(package), "Depends: \(depends)")
            }
            // util-linux is Essential: a package does not depend on it.
            #expect(!depends.contains("util-linux"), "Depends: \(depends)")
        }
    }

    /// debhelper's parts: the group and /tmp/.X11-unix at configure, deskd.service and the timer
    /// enabled and started on the first install and restarted (never stopped first) on upgrade,
    /// deskd-reap.service never started; prerm ends the desktops before the service stops.
    @Test func theMaintainerScriptsDoWhatTheySay() async throws {
        try await withTaskExecutorPreference(DebianPackage.thread) {
            let deb = try await DebianPackage.deb()
            let postinst = try DebianPackage.control(deb, "postinst"), prerm = try DebianPackage.control(deb, "prerm")
            let postrm = try DebianPackage.control(deb, "postrm")
            #expect(try DebianPackage.control(deb, "preinst").isEmpty, "no preinst: nothing is stopped before an upgrade")
            #expect(postinst.contains("systemd-sysusers ${DPKG_ROOT:+--root=\"$DPKG_ROOT\"} deskd.conf"), "\(postinst)")
            #expect(postinst.contains("--create deskd.conf"), "\(postinst)")
            #expect(postinst.contains("deb-systemd-helper enable 'deskd.service'") && postinst.contains("deb-systemd-helper enable 'deskd-reap.timer'"), "\(postinst)")
            #expect(postinst.contains("_dh_action=restart") && postinst.contains("deb-systemd-invoke $_dh_action 'deskd-reap.timer' 'deskd.service'"), "\(postinst)")
            #expect(!postinst.contains("deskd-reap.service") && !prerm.contains("deskd-reap.service"))
            #expect(!postinst.contains("systemctl start"), "\(postinst)")
            let kill = try #require(prerm.range(of: "deskctl kill --all")), stop = try #require(prerm.range(of: "deb-systemd-invoke stop"))
            #expect(kill.lowerBound < stop.lowerBound, "prerm must end the desktops before it stops deskd")
            #expect(postrm.contains("groupdel deskd-admin") && postrm.contains("rm -rf /var/lib/deskd /run/deskd") && postrm.contains("deb-systemd-helper purge"))
            for (name, script) in [("postinst", postinst), ("prerm", prerm), ("postrm", postrm)] {
                #expect(script.hasPrefix("#!/bin/sh\n") && script.contains("set -e"), "\(name)")
                let syntax = try DebianPackage.sh("printf '%s' \"$1\" | /bin/sh -n", script)
                #expect(syntax.status == 0, "\(name): \(syntax.stderr)")
            }
        }
    }
}

/// The package under test and the tools that read it.
enum DebianPackage {
    /// The suite's tests run here, one at a time: they wait seconds on dpkg-deb and lintian, which
    /// on Swift's cooperative pool (a thread per core) would starve the async suites beside them.
    static let thread = DedicatedThreadExecutor()
    static let given = ProcessInfo.processInfo.environment["DESKD_DEB"].flatMap { $0.isEmpty ? nil : $0 }
    static let buildTools = ["/usr/bin/dpkg-buildpackage", "/usr/bin/dh", "/usr/bin/git"]
    static let inspectTools = ["/usr/bin/dpkg-deb", "/usr/bin/lintian"]
    static let canRun = (inspectTools + (given == nil ? buildTools : [])).allSatisfy { access($0, X_OK) == 0 }
    static let skipReason: Comment = """
        needs dpkg-dev, debhelper, git and lintian (scripts/install-deps installs them), or DESKD_DEB \
        naming a built package and dpkg-deb and lintian
        """

    /// The package under test: DESKD_DEB's, or one scripts/make-deb builds once for every test
    /// here. A task, so the tests wait for the build without holding threads of the pool the
    /// other suites run on.
    static let package = Task<String, any Error> {
        if let given {
            guard access(given, R_OK) == 0 else { throw PackageFailure("DESKD_DEB=\(given) is not a readable file") }
            return given
        }
        // One place, overwritten by the next run (.build-deb is gitignored; make-deb's default).
        let output = TestEnvironment.repository.appendingPathComponent(".build-deb/test").path
        // At the lowest priority: the release build takes every core for minutes, and the
        // end-to-end suites running beside it measure times.
        let build = try await runInBackground("/usr/bin/nice", ["-n", "19", TestEnvironment.repository.appendingPathComponent("scripts/make-deb").path, output])
        let path = build.stdout.trimming()
        guard build.status == 0, access(path, R_OK) == 0 else {
            throw PackageFailure("scripts/make-deb failed (exit \(build.status)): \(build.stderr)")
        }
        return path
    }

    struct PackageFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func deb() async throws -> String { try await package.value }

    /// Runs a program to its end without holding a thread while it runs: its output goes to
    /// files, and its end resumes the caller.
    static func runInBackground(_ executable: String, _ arguments: [String]) async throws -> CommandResult {
        let directory = URL(fileURLWithPath: "/tmp/deskt-deb-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("stdout"), err = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        return CommandResult(status: status, stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
                             stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }

    static func sh(_ script: String, _ arguments: String...) throws -> CommandResult {
        try CommandResult.run("/bin/sh", ["-c", script, "sh"] + arguments)
    }

    /// `dpkg-deb --contents`: mode string and path (without the leading ".") of every entry.
    static func contents(_ deb: String) throws -> [String: String] {
        let listing = try CommandResult.run("/usr/bin/dpkg-deb", ["--contents", deb])
        #expect(listing.status == 0, "\(listing.stderr)")
        var entries: [String: String] = [:]
        for line in listing.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[5].hasPrefix(".") else { continue }
            #expect(fields[1] == "root/root", "\(line) is not owned by root")
            var path = String(fields[5].dropFirst())
            if path.count > 1, path.hasSuffix("/") { path.removeLast() }
            entries[path] = String(fields[0])
        }
        return entries
    }

    static func control(_ deb: String, _ file: String) throws -> String {
        try sh("dpkg-deb --ctrl-tarfile \"$1\" | tar -xOf - \"./$2\" 2>/dev/null", deb, file).stdout
    }

    static func data(_ deb: String, _ file: String) throws -> String {
        try sh("dpkg-deb --fsys-tarfile \"$1\" | tar -xOf - \".$2\"", deb, file).stdout
    }
}
