import DeskCore
import DeskLinux
import Foundation
import Glibc
import Testing

/// `make install` stages the whole tree under DESTDIR, the units pass `systemd-analyze verify`,
/// and `make uninstall` takes it all back. Needs make, not root.
@Suite(.enabled(if: access("/usr/bin/make", X_OK) == 0, "needs make (scripts/install-deps installs it)"))
struct InstallTests {
    static let expectedFiles = [
        "etc/deskd/deskd.toml",
        "etc/pam.d/deskd",
        "etc/pam.d/deskd-web",
        "usr/bin/deskctl",
        "usr/libexec/deskd/deskd-auth",
        "usr/libexec/deskd/deskd-files",
        "usr/libexec/deskd/deskd-job",
        "usr/libexec/deskd/deskd-session",
        "usr/libexec/deskd/deskd-web",
        "usr/sbin/deskd",
        "usr/lib/systemd/system/deskd.service",
        "usr/lib/systemd/system/deskd-web.service",
        "usr/lib/systemd/system/deskd-reap.service",
        "usr/lib/systemd/system/deskd-reap.timer",
        "usr/lib/tmpfiles.d/deskd.conf",
        "usr/lib/sysusers.d/deskd.conf",
        "usr/share/man/man1/deskctl.1",
        "usr/share/man/man5/deskd.toml.5",
        "usr/share/man/man8/deskd.8",
        "usr/share/bash-completion/completions/deskctl",
        "usr/share/bash-completion/completions/deskd",
        "usr/share/zsh/site-functions/_deskctl",
        "usr/share/zsh/site-functions/_deskd",
        "usr/share/fish/vendor_completions.d/deskctl.fish",
        "usr/share/fish/vendor_completions.d/deskd.fish",
        "usr/share/doc/deskd/deskd.toml.example",
        "usr/share/doc/deskd/cron.d-deskd-reap",
        "usr/share/doc/deskd/README.md",
        "usr/share/doc/deskd/ADMIN.md",
        "usr/share/doc/deskd/CLUSTER.md",
        "usr/share/doc/deskd/BENCHMARKS.md",
        "usr/share/doc/deskd/HACKING.md",
        "usr/share/doc/deskd/PROTOCOL.md",
        "usr/share/doc/deskd/THREAT_MODEL.md",
    ] + ["auto", "gnome", "kde", "labwc", "lxqt", "mate", "openbox", "sway", "xfce", "xfce-wayland", "xterm"].map { "usr/share/deskd/templates/\($0).xstartup" }
        + ["portal.html", "portal.css", "portal.js", "drop.js"].map { "usr/share/deskd/templates/portal/\($0)" }

    static func make(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let result = try CommandResult.run("/usr/bin/make", ["--no-print-directory", "-C", TestEnvironment.repository.path] + arguments)
        return (result.status, result.stdout + result.stderr)
    }

    static func files(under root: URL) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { path in
            var info = stat()
            return lstat(root.appendingPathComponent(path).path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        }.sorted()
    }

    @Test func makeInstallStagesTheTreeAndUninstallRemovesIt() throws {
        let stage = URL(fileURLWithPath: "/tmp/deskt-stage-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: stage) }
        let common = ["DESTDIR=\(stage.path)", "PREFIX=/usr", "SKIP_BUILD=1", "BUILD_DIR=\(TestEnvironment.products.path)"]

        let install = try Self.make(["install"] + common)
        #expect(install.status == 0, "\(install.output)")
        #expect(Self.files(under: stage) == Self.expectedFiles.sorted())

        // The units name the binaries where PREFIX put them; the completions are real scripts.
        let unit = try String(contentsOf: stage.appendingPathComponent("usr/lib/systemd/system/deskd.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/sbin/deskd --web-front external\n") && unit.contains("Type=notify") && unit.contains("KillMode=process"))
        let front = try String(contentsOf: stage.appendingPathComponent("usr/lib/systemd/system/deskd-web.service"), encoding: .utf8)
        #expect(front.contains("ExecStart=/usr/libexec/deskd/deskd-web --socket /run/deskd/web.sock\n") && front.contains("User=deskd-web"))
        let reap = try String(contentsOf: stage.appendingPathComponent("usr/lib/systemd/system/deskd-reap.service"), encoding: .utf8)
        #expect(reap.contains("ExecStart=/usr/bin/deskctl reap --idle 2h"))
        let bash = try String(contentsOf: stage.appendingPathComponent("usr/share/bash-completion/completions/deskctl"), encoding: .utf8)
        #expect(bash.contains("passwd") && bash.contains("history") && bash.contains("--view-only"))
        var info = stat()
        #expect(stat(stage.appendingPathComponent("usr/sbin/deskd").path, &info) == 0 && info.st_mode & 0o777 == 0o755)
        // Installed binaries are stripped: each is smaller than the build's (which keeps its symbols).
        for (installed, built) in [("usr/sbin/deskd", "deskd"), ("usr/bin/deskctl", "deskctl"), ("usr/libexec/deskd/deskd-session", "deskd-session"),
                                  ("usr/libexec/deskd/deskd-job", "deskd-job"), ("usr/libexec/deskd/deskd-web", "deskd-web"),
                                  ("usr/libexec/deskd/deskd-auth", "deskd-auth"), ("usr/libexec/deskd/deskd-files", "deskd-files")] {
            var staged = stat(), original = stat()
            #expect(stat(stage.appendingPathComponent(installed).path, &staged) == 0
                    && stat(TestEnvironment.products.appendingPathComponent(built).path, &original) == 0
                    && staged.st_size < original.st_size, "\(installed) is not stripped")
        }

        let uninstall = try Self.make(["uninstall"] + common)
        #expect(uninstall.status == 0, "\(uninstall.output)")
        #expect(Self.files(under: stage) == ["etc/deskd/deskd.toml"], "uninstall leaves only the admin's configuration")
    }

    /// docs/man is generated (make man) and committed; a new subcommand must be in it.
    @Test func theManPagesCoverEverySubcommand() throws {
        let page = try String(contentsOf: TestEnvironment.repository.appendingPathComponent("docs/man/deskctl.1"), encoding: .utf8)
        for command in Command.allCases.filter({ $0 != .ping }).map(\.rawValue) {
            #expect(page.contains(".It Em \(command)"), "docs/man/deskctl.1 lacks \(command); run make man")
        }
        let daemon = try String(contentsOf: TestEnvironment.repository.appendingPathComponent("docs/man/deskd.8"), encoding: .utf8)
        #expect(daemon.contains("check-config") && daemon.contains("SIGHUP"))
    }

    @Test(.enabled(if: access("/usr/bin/systemd-analyze", X_OK) == 0, "needs systemd-analyze (scripts/install-deps installs systemd)"))
    func theUnitsPassSystemdAnalyzeVerify() throws {
        let stage = URL(fileURLWithPath: "/tmp/deskt-units-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: stage) }
        // verify checks that ExecStart exists, so point the units at the binaries just built.
        let install = try Self.make(["install", "DESTDIR=\(stage.path)", "SKIP_BUILD=1", "BUILD_DIR=\(TestEnvironment.products.path)",
                                     "SBINDIR=\(TestEnvironment.products.path)", "BINDIR=\(TestEnvironment.products.path)",
                                     "UNITDIR=/units"])
        #expect(install.status == 0, "\(install.output)")
        let units = ["deskd.service", "deskd-reap.service", "deskd-reap.timer"].map { stage.appendingPathComponent("units/\($0)").path }
        let verify = try CommandResult.run("/usr/bin/systemd-analyze", ["verify", "--man=no"] + units)
        let output = verify.stdout + verify.stderr
        // A unit with a bad key still exits 0, so the output must be empty too.
        #expect(verify.status == 0 && output.isEmpty, "systemd-analyze verify: \(output)")
    }
}
