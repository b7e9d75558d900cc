import CDeskShims
import DeskLinux
import Glibc

/// A child process's stdin and stdout as two pipes: the child's ends blocking (as a process's
/// stdin and stdout are expected to be), deskd's non-blocking, every one close-on-exec and above
/// 0-2 (those are the child's to be given). deskd-session and deskd-auth are started with them.
struct HelperPipes {
    /// The child's stdin, and deskd's end that writes to it.
    let childInput: Int32, toChild: Int32
    /// The child's stdout, and deskd's end that reads it.
    let childOutput: Int32, fromChild: Int32

    static func make(for program: String) throws(OSError) -> HelperPipes {
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1]
        guard deskd_pipe_cloexec_nonblock(&input) == 0 else { throw OSError("pipe", path: program) }
        guard deskd_pipe_cloexec_nonblock(&output) == 0 else { close(input[0]); close(input[1]); throw OSError("pipe", path: program) }
        for fd in [input[0], output[1]] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        input = input.map(deskd_above_stdio)
        output = output.map(deskd_above_stdio)
        return HelperPipes(childInput: input[0], toChild: input[1], childOutput: output[1], fromChild: output[0])
    }

    /// Once the child has them (or failed to start): deskd's copies of its ends go.
    func closeChildEnds() {
        close(childInput)
        close(childOutput)
    }

    func closeOwnEnds() {
        close(toChild)
        close(fromChild)
    }
}

/// deskd's companion programs (deskd-session, deskd-web, deskd-auth): beside deskd (the build
/// tree), or in ../libexec/deskd (an install).
enum Companion {
    static func locate(_ name: String) -> String? {
        guard let deskd = ProcFS.executable(of: getpid()) else { return nil }
        let directory = String(deskd[..<(deskd.lastIndex(of: "/") ?? deskd.startIndex)])
        let parent = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
        return [directory + "/" + name, parent + "/libexec/deskd/" + name].first { access($0, X_OK) == 0 }
    }
}
