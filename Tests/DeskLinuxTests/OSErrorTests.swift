import DeskCore
@testable import DeskHost
import DeskLinux
import Glibc
import Testing

/// A failed system call keeps its cause: the errno and the path travel with the error, and its
/// sentence says both, whoever catches it.
@Suite struct OSErrorTests {
    @Test func theErrnoOfTheFailedCallAndThePathAreKept() {
        let path = "/nonexistent-\(getpid())/file"
        // Taken at once after the call: nothing in between may overwrite errno.
        let fd = open(path, O_RDONLY)
        let error = OSError("open", path: path)
        #expect(fd == -1)
        #expect(error.errno == ENOENT && error.path == path && error.operation == "open")
        #expect(error.description == "open \(path): \(String(cString: strerror(ENOENT)))")
        #expect(error.description.contains(path) && error.description.contains("No such file or directory"))
    }

    @Test func anErrnoGivenIsKeptAndAnErrorWithoutAPathSaysSo() {
        let error = OSError("no answer", path: "deskd-session", errno: ETIMEDOUT)
        #expect(error.errno == ETIMEDOUT && error.description == "no answer deskd-session: \(String(cString: strerror(ETIMEDOUT)))")
        let pathless = OSError("pipe", errno: EMFILE)
        #expect(pathless.path == nil && pathless.description == "pipe: \(String(cString: strerror(EMFILE)))")
        // And through `any Error`, as the daemon logs it.
        let erased: any Error = error
        #expect("\(erased)".contains("deskd-session") && "\(erased)".contains(String(cString: strerror(ETIMEDOUT))))
    }

    /// As a DeskError's cause: the same call, path and errno, with errno's name and text.
    @Test func aFailedCallIsASystemCause() {
        let cause = DeskError.Cause(OSError("mkdir", path: "/run/deskd/by-id/x", errno: EACCES))
        #expect(cause == .system(operation: "mkdir", path: "/run/deskd/by-id/x", errno: EACCES, name: "EACCES", text: "Permission denied"))
        #expect(cause.description == "mkdir /run/deskd/by-id/x: EACCES (Permission denied)")
        #expect(DeskError.Cause(OSError("pipe", errno: EMFILE)) == .system(operation: "pipe", path: nil, errno: EMFILE, name: "EMFILE", text: "Too many open files"))
        // A number the C library has no name for keeps its number and strerror's words.
        #expect(DeskError.Cause(OSError("ioctl", errno: 4000)) == .system(operation: "ioctl", path: nil, errno: 4000, name: nil, text: "Unknown error 4000"))
        // What a call site writes: the sentence as before, the cause beside it.
        let error = OSError("mkdir", path: "/run/deskd/by-id/x", errno: EACCES)
        let refusal = DeskError(.internalError, "could not prepare the session directory /run/deskd/by-id/x: \(error).", cause: .init(error))
        #expect(refusal.message == "could not prepare the session directory /run/deskd/by-id/x: mkdir /run/deskd/by-id/x: Permission denied.")
        #expect(refusal.cause == cause)
    }

    /// What DeskLinux itself throws carries the call's own errno and the path it failed on.
    @Test func deskLinuxThrowsWithTheCauseAndThePath() throws {
        let scratch = try Scratch()
        let missing = scratch.path + "/missing"
        do {
            _ = try SessionCGroup.create(base: missing, name: "s1")
            Issue.record("created a cgroup under a missing directory")
        } catch {
            #expect(error.errno == ENOENT && error.path == missing + "/s1" && error.operation == "mkdir")
        }
        let file = scratch.path + "/file"
        SecureTreeTests.write(file, "")
        do {
            try SessionDirectory(path: file + "/s1").create(
                owner: getuid(), group: getgid(), contents: .init(password: [], xauthority: [], xstartup: ""))
            Issue.record("created a session directory under a file")
        } catch {
            #expect(error.errno == ENOTDIR && error.path == file + "/s1")
            #expect("\(error)".contains(file + "/s1") && "\(error)".contains(String(cString: strerror(ENOTDIR))))
        }
    }
}
