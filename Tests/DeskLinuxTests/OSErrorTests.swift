@testable import DeskLinux
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
