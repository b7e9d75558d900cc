import Glibc

/// One run of a command: how it ended, what it printed, how long it took from spawn to exit.
///
/// posix_spawn and waitpid, not Foundation's Process: its waitUntilExit notices an exit only
/// on a run-loop tick (up to 50 ms late here), which would be counted against deskctl.
struct Run {
    let status: Int32
    let stdout: String
    let seconds: Double
    /// User and system CPU time of the process (and of its children), from wait4's rusage.
    let cpuSeconds: Double

    /// `capture: false` for commands that leave a daemon holding their stdout (vncserver does):
    /// then only the exit is waited for.
    static func of(_ executable: String, _ arguments: [String], as user: String? = nil, capture: Bool = true) throws -> Run {
        let argv = user.map { ["/usr/sbin/runuser", "-u", $0, "--", executable] } ?? [executable]
        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else { throw Options.Usage("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if capture {
            posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        posix_spawn_file_actions_addclose(&actions, pipe[1])
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let cArguments = (argv + arguments).map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let start = now()
        let spawned = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, environ)
        close(pipe[1])
        guard spawned == 0 else { close(pipe[0]); throw Options.Usage("cannot run \(executable)") }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(pipe[0], $0.baseAddress, $0.count) }
            if n > 0 { output += chunk[0..<n] } else if n < 0 && errno == EINTR { continue } else { break }
        }
        close(pipe[0])
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = now() - start
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        let cpu = [usage.ru_utime, usage.ru_stime].reduce(0.0) { $0 + Double($1.tv_sec) + Double($1.tv_usec) / 1e6 }
        return Run(status: code, stdout: String(decoding: output, as: UTF8.self), seconds: seconds, cpuSeconds: cpu)
    }
}
