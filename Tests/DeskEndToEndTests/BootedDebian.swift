import DeskCore
import DeskLinux
import Foundation
import Glibc

/// A Debian (12 or 13) booted with systemd as PID 1 in a systemd-nspawn container, for tests of what only
/// a real systemd shows: apt installing the package, `systemctl`, `journalctl`, Type=notify.
/// DESIGN.md ("Facts checked on this machine kind, 2026-11-24") is the recipe followed here.
///
/// The root is debootstrapped once and cached under /var/cache/deskd-test, keyed by what is
/// preinstalled in it (`image(preinstalling:)`); each boot runs on an overlay of it, so the
/// cached image stays clean. The container has no network (`--private-network`): it neither
/// reaches the mirror nor shares the host's TCP ports and abstract X sockets with the other
/// tests' Xvnc servers. The host reaches its files (and Unix sockets) through
/// /proc/<PID 1>/root (`hostPath(_:)`).
final class BootedDebian {
    static let cacheDirectory = "/var/cache/deskd-test"
    /// The releases the package is tested on: Debian 12 (oldstable, this host's) and 13 (stable).
    static let suites = ["bookworm", "trixie"]
    /// What the host needs for this; the test skips with their names when one is missing.
    static let tools = ["/usr/sbin/debootstrap", "/usr/bin/systemd-nspawn", "/usr/bin/nsenter", "/usr/bin/unshare",
                        "/usr/sbin/chroot", "/usr/bin/timeout"]
    static var missingTools: [String] { tools.filter { access($0, X_OK) != 0 } }
    /// Always in the image: systemd as init and what the tests use inside.
    static let basePackages = ["systemd", "systemd-sysv", "dbus", "iproute2", "procps"]
    /// Bumped when the recipe below changes, so older cached images are not used.
    static let recipe = "1"

    let name: String
    /// The per-boot directory: the overlay's upper, work and merged directories and the console log.
    let runDirectory: String
    private(set) var nspawnPID: pid_t = 0
    /// The container's PID 1 (systemd) as the host sees it.
    private(set) var pid1: pid_t = 0
    private var nspawn: Process?

    // MARK: - The cached image

    struct Image {
        let path: String
        /// Seconds spent building it; 0 when it came from the cache.
        let buildSeconds: Double
    }

    /// The image with `packages` preinstalled (besides `basePackages`), built when missing.
    /// Built in a temporary directory and renamed into place, so a killed run never leaves half
    /// an image; debootstrap and apt-get run in a mount namespace of their own, so their /proc
    /// mounts vanish with them.
    static func image(_ suite: String, preinstalling packages: [String]) throws -> Image {
        let wanted = Array(Set(packages)).sorted()
        let mirror = Self.mirror()
        let key = Self.hash(([recipe, suite, mirror] + basePackages + wanted).joined(separator: "\n"))
        let path = "\(cacheDirectory)/\(suite)-\(key)"
        let marker = path + "/.deskd-test-image"
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        Self.removeAbandonedBuilds()
        Self.pruneImages(of: suite, keeping: path)
        if access(marker, F_OK) == 0 {
            utimes(marker, nil)
            return Image(path: path, buildSeconds: 0)
        }

        let started = Date()
        let temporary = "\(cacheDirectory)/.building-\(key)-\(getpid())"
        let log = temporary + ".log"
        defer { _ = try? run("/bin/rm", ["-rf", "--one-file-system", temporary]) }
        print("BootedDebian: building the \(suite) image \(path) (debootstrap from \(mirror), then \(wanted.joined(separator: " "))); log: \(log)")

        try step("debootstrap", log: log, "/usr/bin/unshare", ["--mount", "--propagation", "private", "--fork",
            "/usr/sbin/debootstrap", "--variant=minbase", "--include=" + basePackages.joined(separator: ","), suite, temporary, mirror])
        // The host's sources (its mirror, updates and security) for the image's release, so the
        // image is as current as the host.
        let sources = "/etc/apt/sources.list.d/debian.sources"
        if let text = Self.sources(for: suite) {
            _ = try? FileManager.default.removeItem(atPath: temporary + "/etc/apt/sources.list")
            try text.write(toFile: temporary + sources, atomically: true, encoding: .utf8)
        }
        // No Recommends of the preinstalled packages: the container installs only the package
        // under test, whose own Recommends are in `packages`.
        try step("apt-get install", log: log, "/usr/bin/unshare", ["--mount", "--propagation", "private", "--pid", "--fork",
            "--mount-proc=\(temporary)/proc", "/usr/sbin/chroot", temporary,
            "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "/bin/sh", "-c",
            "apt-get update -q && apt-get install -y -q --no-install-recommends \"$@\" && apt-get clean", "sh"] + wanted)
        // systemd-firstboot fails without a tty (the system is then `degraded`); an empty
        // machine-id makes systemd generate one per boot; dbus's own copy would be stale.
        try FileManager.default.createSymbolicLink(atPath: temporary + "/etc/systemd/system/systemd-firstboot.service", withDestinationPath: "/dev/null")
        try Data().write(to: URL(fileURLWithPath: temporary + "/etc/machine-id"))
        _ = try? FileManager.default.removeItem(atPath: temporary + "/var/lib/dbus/machine-id")
        try (wanted.joined(separator: "\n") + "\n").write(toFile: temporary + "/.deskd-test-image", atomically: true, encoding: .utf8)

        // Another run may have finished the same image meanwhile: theirs is as good as ours.
        if rename(temporary, path) != 0 && access(marker, F_OK) != 0 {
            throw Failure("could not move the image into \(path): \(String(cString: strerror(errno)))")
        }
        try? FileManager.default.removeItem(atPath: log)
        return Image(path: path, buildSeconds: Date().timeIntervalSince(started))
    }

    /// `image(preinstalling:)` on a thread of its own: a build takes minutes, and the other
    /// suites' tests run on the pool's threads meanwhile.
    static func imageInBackground(_ suite: String, preinstalling packages: [String]) async throws -> Image {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try image(suite, preinstalling: packages) }) }.start()
        }
    }

    /// The host's deb822 sources with its own release's name changed to `suite`'s (bookworm's
    /// `bookworm-updates` becomes `trixie-updates`); nil without such a file.
    static func sources(for suite: String) -> String? {
        guard let text = try? String(contentsOfFile: "/etc/apt/sources.list.d/debian.sources", encoding: .utf8) else { return nil }
        let release = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8))?.split(separator: "\n")
            .first { $0.hasPrefix("VERSION_CODENAME=") }.map { String($0.dropFirst("VERSION_CODENAME=".count)) }
        guard let release, !release.isEmpty, release != suite else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("Suites:") ? line.replacingOccurrences(of: release, with: suite) : String(line)
        }.joined(separator: "\n")
    }

    /// The Debian mirror the host uses (its deb822 sources or sources.list), else deb.debian.org.
    static func mirror() -> String {
        if let text = try? String(contentsOfFile: "/etc/apt/sources.list.d/debian.sources", encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("URIs:") {
                if let uri = line.dropFirst(5).split(separator: " ").first, !uri.contains("security") { return String(uri) }
            }
        }
        if let text = try? String(contentsOfFile: "/etc/apt/sources.list", encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.first == "deb", let uri = fields.first(where: { $0.contains("://") }), !uri.contains("security") { return String(uri) }
            }
        }
        return "http://deb.debian.org/debian"
    }

    /// Image builds of runs that were killed (their pid is gone).
    private static func removeAbandonedBuilds() {
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? [] where entry.hasPrefix(".building-") {
            let pid = entry.split(separator: "-").last.flatMap { pid_t($0.split(separator: ".").first ?? "") }
            if let pid, kill(pid, 0) != 0 && errno == ESRCH {
                _ = try? run("/bin/rm", ["-rf", "--one-file-system", "\(cacheDirectory)/\(entry)"])
            }
        }
    }

    /// Images no run has used for a week (a package's dependencies changed since): each is a few
    /// hundred MB. The marker's time is its last use; an image in use now was touched at its start.
    private static func pruneImages(of suite: String, keeping current: String) {
        let weekAgo = Date().addingTimeInterval(-7 * 24 * 3600)
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? [] where entry.hasPrefix("\(suite)-") {
            let path = "\(cacheDirectory)/\(entry)"
            guard path != current,
                  let used = (try? FileManager.default.attributesOfItem(atPath: path + "/.deskd-test-image"))?[.modificationDate] as? Date,
                  used < weekAgo
            else { continue }
            _ = try? run("/bin/rm", ["-rf", "--one-file-system", path])
        }
    }

    /// FNV-1a, 64 bits, in hex: a cache key, not a checksum anyone relies on.
    static func hash(_ text: String) -> String {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(value, radix: 16)
    }

    // MARK: - A boot

    /// Boots `image` on an overlay of its own and waits until PID 1 is there (not until the
    /// system is up: see `waitUntilRunning`). `bindReadOnly` maps host directories to paths
    /// inside. Throws after undoing whatever it set up.
    init(image: Image, name: String, bindReadOnly: [String: String] = [:]) throws {
        self.name = name
        runDirectory = "/var/tmp/\(name)"
        Self.removeAbandonedBoots()
        Self.tearDown(name: name)
        do {
            try start(image: image, bindReadOnly: bindReadOnly)
        } catch {
            stop()
            throw error
        }
    }

    /// The cgroups the container's processes live in: one under each hierarchy systemd uses
    /// (the named v1 `systemd` one and the v2 one, as in DESIGN.md), or under the v2 root on a
    /// host with only cgroup v2. Without them two containers would share /payload/init.scope.
    static func cgroups(of name: String) -> [String] {
        let hybrid = ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"].filter { access($0 + "/cgroup.procs", F_OK) == 0 }
        if !hybrid.isEmpty { return hybrid.map { "\($0)/\(name)" } }
        return ["/sys/fs/cgroup/\(name)"]
    }

    private func start(image: Image, bindReadOnly: [String: String]) throws {
        let upper = runDirectory + "/upper", work = runDirectory + "/work", merged = runDirectory + "/merged"
        for directory in [upper, work, merged] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        guard mount("overlay", merged, "overlay", 0, "lowerdir=\(image.path),upperdir=\(upper),workdir=\(work)") == 0 else {
            throw Failure("mount of the overlay on \(merged) failed: \(String(cString: strerror(errno)))")
        }
        let cgroups = Self.cgroups(of: name)
        for cgroup in cgroups { try FileManager.default.createDirectory(atPath: cgroup, withIntermediateDirectories: false) }

        // A shell moves itself into the cgroups, then becomes systemd-nspawn.
        let enter = cgroups.map { "echo $$ > \($0)/cgroup.procs" }.joined(separator: " && ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(enter) && exec \"$@\"", "sh", "/usr/bin/systemd-nspawn", "-q", "-D", merged, "-b", "-M", name,
                             "--register=no", "--keep-unit", "--console=pipe", "--private-network"]
            + bindReadOnly.sorted { $0.key < $1.key }.map { "--bind-ro=\($0.key):\($0.value)" }
        let console = runDirectory + "/console.log"
        _ = FileManager.default.createFile(atPath: console, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: console))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        nspawn = process
        nspawnPID = process.processIdentifier

        // PID 1 is the child of systemd-nspawn named `systemd`.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let found = ProcFS.allPIDs().first(where: { Self.parent(of: $0) == nspawnPID && Self.command(of: $0) == "systemd" }) {
                pid1 = found
                return
            }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        throw Failure("systemd did not come up in the container; systemd-nspawn said:\n\(consoleText)")
    }

    var consoleText: String { (try? String(contentsOfFile: runDirectory + "/console.log", encoding: .utf8)) ?? "" }

    /// Polls `systemctl is-system-running` until the boot is over; returns its last answer
    /// (`running`, or `degraded` when a unit failed, or what it said when time ran out).
    func waitUntilRunning(seconds: Double = 90) -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var state = ""
        while Date() < deadline {
            state = ((try? exec(["systemctl", "is-system-running"], timeout: 10))?.stdout ?? "").trimming()
            if state == "running" || state == "degraded" || state == "maintenance" || state == "stopping" { return state }
            guard nspawn?.isRunning == true else { return "offline (systemd-nspawn exited)" }
            usleep(100_000)
        }
        return state
    }

    /// Runs a command inside the container, in all its namespaces, with a clean environment
    /// (plus `environment`), stdin from /dev/null; killed after `timeout` seconds.
    func exec(_ command: [String], environment: [String: String] = [:], timeout: Int = 300) throws -> CommandResult {
        let variables = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try CommandResult.run("/usr/bin/timeout", ["-k", "5", "\(timeout)", "/usr/bin/nsenter", "-t", "\(pid1)", "-a",
                                                          "/usr/bin/env", "-i"] + variables + command)
    }

    /// `sh -c SCRIPT` inside.
    func shell(_ script: String, environment: [String: String] = [:], timeout: Int = 300) throws -> CommandResult {
        try exec(["/bin/sh", "-c", script], environment: environment, timeout: timeout)
    }

    /// A path inside the container as the host reaches it (root may connect to its Unix sockets).
    func hostPath(_ inside: String) -> String { "/proc/\(pid1)/root\(inside)" }

    /// Powers the container off (SIGTERM to systemd-nspawn: a clean shutdown), then removes the
    /// cgroups, the overlay and its directories. Safe to call more than once.
    func stop() {
        if let nspawn, nspawn.isRunning {
            kill(nspawnPID, SIGTERM)
            let deadline = Date().addingTimeInterval(30)
            while nspawn.isRunning && Date() < deadline { usleep(50_000) }
            if nspawn.isRunning { kill(nspawnPID, SIGKILL) }
            nspawn.waitUntilExit()
        }
        nspawn = nil
        Self.tearDown(name: name)
    }

    /// Boots of runs that were killed before they could stop them (`deskd-booted-…-<pid>`, the
    /// pid gone): their container, cgroups, overlay and directory, and the other directories such
    /// runs left in /var/tmp under that prefix (tearing one of those down only removes it).
    static func removeAbandonedBoots() {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: "/var/tmp")) ?? [])
            + ((try? FileManager.default.contentsOfDirectory(atPath: (cgroups(of: "").first ?? "/nonexistent"))) ?? [])
        for entry in Set(names) where entry.hasPrefix("deskd-booted-") {
            guard let pid = entry.split(separator: "-").last.flatMap({ pid_t($0) }), kill(pid, 0) != 0 && errno == ESRCH else { continue }
            tearDown(name: entry)
        }
    }

    /// Ends whatever is still in the container's cgroups, removes them (deepest first), unmounts
    /// the overlay and removes the run directory. Also what cleans up after a killed run.
    static func tearDown(name: String) {
        let cgroups = cgroups(of: name)
        for _ in 0..<50 {
            let left = cgroups.flatMap { members(of: $0) }
            if left.isEmpty { break }
            for pid in left { kill(pid, SIGKILL) }
            usleep(100_000)
        }
        for cgroup in cgroups {
            for directory in subdirectories(of: cgroup).reversed() { rmdir(directory) }
        }
        let run = "/var/tmp/\(name)"
        let merged = run + "/merged"
        if umount2(merged, 0) != 0 && errno != EINVAL && errno != ENOENT { umount2(merged, Int32(MNT_DETACH)) }
        _ = try? Self.run("/bin/rm", ["-rf", "--one-file-system", run])
    }

    /// A cgroup directory and every one below it, parents first.
    private static func subdirectories(of directory: String) -> [String] {
        guard access(directory, F_OK) == 0 else { return [] }
        var all = [directory]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            var info = stat()
            let path = directory + "/" + entry
            if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR { all += subdirectories(of: path) }
        }
        return all
    }

    /// The processes in a cgroup and below.
    private static func members(of cgroup: String) -> [pid_t] {
        subdirectories(of: cgroup).flatMap { directory in
            ((try? String(contentsOfFile: directory + "/cgroup.procs", encoding: .utf8)) ?? "").split(separator: "\n").compactMap { pid_t($0) }
        }
    }

    /// Field 4 of /proc/PID/stat.
    static func parent(of pid: pid_t) -> pid_t? {
        guard let stat = ProcFS.readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? pid_t(fields[1]) : nil
    }

    static func command(of pid: pid_t) -> String? {
        ProcFS.readText("/proc/\(pid)/comm")?.trimming()
    }

    // MARK: - Helpers

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs a tool of the image build with its output appended to `log`; throws with the log's tail.
    private static func step(_ what: String, log: String, _ tool: String, _ arguments: [String]) throws {
        if access(log, F_OK) != 0 { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        handle.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw Failure("\(what) failed (exit \(process.terminationStatus)) building the test image:\n\(text.split(separator: "\n").suffix(30).joined(separator: "\n"))")
        }
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> CommandResult {
        try CommandResult.run(tool, arguments)
    }
}
