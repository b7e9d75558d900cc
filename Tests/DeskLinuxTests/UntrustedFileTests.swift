import DeskPOSIX
import DeskCore
@testable import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// Temporary files for one test, removed afterwards.
final class Scratch {
    let path: String

    init() throws {
        path = "/tmp/desklinux-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(path, 0o700) == 0 else { throw POSIXError(.EEXIST) }
    }

    deinit { SecureTree.remove(path) }

    func file(_ name: String, _ contents: String) -> String {
        let file = path + "/" + name
        _ = FileManager.default.createFile(atPath: file, contents: Data(contents.utf8))
        return file
    }
}

/// Whatever another user plants where root reads, the read ends at once: no FIFO waits for a
/// writer, no symlink is followed, no socket or oversized file is read. Needs no root.
@Suite struct UntrustedFileTests {
    @Test func aRegularFileIsRead() throws {
        let scratch = try Scratch()
        let file = scratch.file("lock", "      4242\n")
        guard case .contents(let bytes, let size, let owner) = UntrustedFile.read(file, limit: 64) else {
            Issue.record("not read"); return
        }
        #expect(String(decoding: bytes, as: UTF8.self) == "      4242\n" && size == 11 && owner == getuid())
        #expect(UntrustedFile.read(scratch.path + "/missing", limit: 64) == .missing)
    }

    @Test func aFIFOIsRefusedWithoutWaitingForAWriter() throws {
        let scratch = try Scratch()
        let fifo = scratch.path + "/fifo"
        #expect(mkfifo(fifo, 0o644) == 0)
        // Without O_NONBLOCK this open would never return: nobody writes to the FIFO.
        #expect(UntrustedFile.read(fifo, limit: 64) == .refused("is a FIFO"))
    }

    @Test func aSymlinkIsRefusedNotFollowed() throws {
        let scratch = try Scratch()
        let target = scratch.file("secret", "root's secret")
        let link = scratch.path + "/link"
        #expect(symlink(target, link) == 0)
        #expect(UntrustedFile.read(link, limit: 64) == .refused("is a symlink"))
    }

    @Test func aSocketIsRefused() throws {
        let scratch = try Scratch()
        let path = scratch.path + "/socket"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(UnixSocketAddress(path)!.withSockaddr { bind(fd, $0, $1) } == 0)
        #expect(UntrustedFile.read(path, limit: 64) == .refused("is a socket"))
    }

    @Test func anOversizedFileIsRefusedOrTailed() throws {
        let scratch = try Scratch()
        let file = scratch.file("big", String(repeating: "x", count: 100) + "end")
        guard case .refused(let why) = UntrustedFile.read(file, limit: 64) else { Issue.record("read a 103-byte lock"); return }
        #expect(why.contains("103 bytes"))
        guard case .contents(let bytes, let size, _) = UntrustedFile.read(file, limit: 8, tail: true) else { Issue.record("no tail"); return }
        #expect(String(decoding: bytes, as: UTF8.self) == "xxxxxend" && size == 103)
    }

    @Test func aLeasedFileIsRefusedInsteadOfWaitingOutTheLease() throws {
        let scratch = try Scratch()
        let file = scratch.file("leased", "      4242\n")
        // A write lease makes every other open of the file wait (up to lease-break-time, 45 s)
        // for its holder to let go; the holder here is another open file of this process.
        let holder = open(file, O_RDONLY)
        defer { close(holder) }
        let F_SETLEASE: Int32 = 1024
        // Breaking the lease signals its holder (this process) with SIGIO, which would end it.
        signal(SIGIO, SIG_IGN)
        // The kernel refuses a write lease while anyone else has the file open; a test running
        // beside this one may hold it for a moment (a forked child before its exec), so try a while.
        var leased = fcntl(holder, F_SETLEASE, Int32(F_WRLCK)) == 0
        for _ in 0..<100 where !leased && errno == EAGAIN {
            usleep(10_000)
            leased = fcntl(holder, F_SETLEASE, Int32(F_WRLCK)) == 0
        }
        try #require(leased, "fcntl(F_SETLEASE): \(String(cString: strerror(errno)))")
        let start = ContinuousClock.now
        #expect(UntrustedFile.read(file, limit: 64) == .refused("is leased by another process"))
        #expect(ContinuousClock.now - start < .seconds(5), "the read waited for the lease")
    }

    @Test func aDirectoryIsRefusedAndAnEmptyFileIsRead() throws {
        let scratch = try Scratch()
        #expect(mkdir(scratch.path + "/dir", 0o700) == 0)
        #expect(UntrustedFile.read(scratch.path + "/dir", limit: 64) == .refused("is a directory"))
        let empty = scratch.file("empty", "")
        #expect(UntrustedFile.read(empty, limit: 64) == .contents([], size: 0, owner: getuid()))
        #expect(UntrustedFile.read(empty, limit: 0, tail: true) == .contents([], size: 0, owner: getuid()))
    }

    /// A file its owner made unreadable: root reads it (as root reads everything), anyone else
    /// is refused with the reason, never blocked.
    @Test func aFileWithNoPermissionsIsReadOnlyByRoot() throws {
        let scratch = try Scratch()
        let file = scratch.file("locked", "      4242\n")
        #expect(chmod(file, 0) == 0)
        if getuid() == 0 {
            #expect(UntrustedFile.read(file, limit: 64) == .contents(Array("      4242\n".utf8), size: 11, owner: 0))
        } else {
            #expect(UntrustedFile.read(file, limit: 64) == .refused("cannot be opened (\(String(cString: strerror(EACCES))))"))
        }
    }

    @Test func aCharacterDeviceIsRefused() {
        #expect(UntrustedFile.read("/dev/null", limit: 64) == .refused("is a character device"))
    }
}
