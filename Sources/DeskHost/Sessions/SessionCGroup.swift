import DeskLinux
import Glibc

/// A session's own cgroup (v2): every process the session spawns stays in it, however it
/// forks or detaches, so "kill" can find them all and `cgroup.kill` can end them at once.
public struct SessionCGroup: Sendable, Equatable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Where session cgroups go: `deskd-sessions` beside the daemon in the cgroup v2 tree
    /// (under systemd with Delegate=yes, inside deskd.service's delegated subtree), or nil
    /// when there is no writable cgroup v2 hierarchy.
    public static func defaultBase() -> String? {
        guard let mounts = ProcFS.readText("/proc/self/mounts"),
              let mount = mounts.split(separator: "\n").lazy.map({ $0.split(separator: " ") })
                .first(where: { $0.count > 2 && $0[2] == "cgroup2" })?[1],
              let membership = ProcFS.readText("/proc/self/cgroup"),
              let own = membership.split(separator: "\n").first(where: { $0.hasPrefix("0::") })?.dropFirst(3)
        else { return nil }
        let base = String(mount) + (own == "/" ? "" : String(own)) + "/deskd-sessions"
        guard mkdir(base, 0o755) == 0 || errno == EEXIST, access(base + "/cgroup.procs", W_OK) == 0 else { return nil }
        return base
    }

    /// The cgroup named `name` under `base`.
    static func path(base: String, name: String) -> String { base + "/" + name }

    public static func create(base: String, name: String) throws(OSError) -> SessionCGroup {
        let path = path(base: base, name: name)
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw OSError("mkdir", path: path) }
        return SessionCGroup(path: path)
    }

    /// Turns on the pids and memory controllers for the session cgroups under `base`, as far as
    /// the tree above delegates them, and returns those now on. (The cgroup above `base` must
    /// have them in its subtree_control; deskd cannot do that from inside it, as it holds a process.)
    public static func enableLimitControllers(base: String) -> Set<String> {
        let available = Set((ProcFS.readText(base + "/cgroup.controllers") ?? "").split(whereSeparator: \.isWhitespace).map(String.init))
        let wanted = available.intersection(["pids", "memory"])
        for controller in wanted.sorted() {
            try? SessionCGroup(path: base).write("cgroup.subtree_control", "+\(controller)\n")
        }
        return Set((ProcFS.readText(base + "/cgroup.subtree_control") ?? "").split(whereSeparator: \.isWhitespace).map(String.init))
            .intersection(["pids", "memory"])
    }

    /// Caps the session's tasks (pids.max: a fork bomb stops there) and memory (memory.max),
    /// where those controllers are on; a limit whose file is missing is skipped.
    public func limit(tasks: Int?, memoryBytes: Int?) {
        if let tasks, access(path + "/pids.max", F_OK) == 0 { try? write("pids.max", "\(tasks)\n") }
        if let memoryBytes, access(path + "/memory.max", F_OK) == 0 { try? write("memory.max", "\(memoryBytes)\n") }
    }

    /// Moves a process (and so, from now on, all it forks) into the cgroup.
    public func add(_ pid: pid_t) throws(OSError) {
        try write("cgroup.procs", "\(pid)\n")
    }

    public var pids: [pid_t] {
        (ProcFS.readText(path + "/cgroup.procs") ?? "").split(separator: "\n").compactMap { pid_t($0) }
    }

    public var exists: Bool { access(path, F_OK) == 0 }

    /// Sends `signal` to every process in the cgroup.
    public func signalAll(_ signal: Int32) {
        for pid in pids { kill(pid, signal) }
    }

    /// SIGKILLs everything in the cgroup, in the kernel, without a pid race.
    public func killAll() {
        if (try? write("cgroup.kill", "1\n")) == nil { signalAll(SIGKILL) }
    }

    public func remove() {
        rmdir(path)
    }

    private func write(_ file: String, _ text: String) throws(OSError) {
        let target = path + "/" + file
        let fd = open(target, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw OSError("open", path: target) }
        defer { close(fd) }
        let written = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        guard written >= 0 else { throw OSError("write", path: target) }
    }
}
