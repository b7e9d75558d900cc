@testable import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// Issue 48: one deskd per runtime directory, and a lock nobody else can take.
@Suite struct DaemonLockTests {
    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-lock-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    @Test func aSecondHolderIsRefusedWithTheFirstsPidAndSocket() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: DaemonLock? = try DaemonLock.acquire(directory: directory, socket: "/run/first.sock")
        #expect(first != nil)
        do {
            _ = try DaemonLock.acquire(directory: directory, socket: "/run/second.sock")
            Issue.record("a second lock on the same directory was granted")
        } catch let held as DaemonLock.Held {
            #expect(held.pid == getpid() && held.socket == "/run/first.sock", "\(held)")
            #expect(held.description.contains("pid \(getpid()), socket /run/first.sock") && held.description.contains("--runtime-dir"), "\(held.description)")
        }
        var info = stat()
        #expect(stat(directory + "/" + DaemonLock.fileName, &info) == 0 && info.st_mode & 0o777 == 0o600, "the lock file may be opened by others")
        first = nil
        #expect(throws: Never.self) { _ = try DaemonLock.acquire(directory: directory, socket: "/run/second.sock") }
    }

    /// flock takes a read-only descriptor, so a lock file others could open would be a lock
    /// others could hold: deskd makes it root's 0600 in a directory only root writes in, and
    /// replaces one others could open, unless a deskd holds it.
    @Test func aLockFileOthersCouldOpenIsReplacedUnlessItIsHeld() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + DaemonLock.fileName
        let planted = open(path, O_RDWR | O_CREAT, 0o644)
        _ = fchmod(planted, 0o644)
        #expect(flock(planted, LOCK_EX | LOCK_NB) == 0)
        #expect(throws: DaemonLock.Held.self) { _ = try DaemonLock.acquire(directory: directory, socket: "/run/deskd.sock") }
        close(planted)
        let lock = try DaemonLock.acquire(directory: directory, socket: "/run/deskd.sock")
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        withExtendedLifetime(lock) {}
    }

    @Test func aRuntimeDirectoryOthersMayWriteInIsRefused() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        chmod(directory, 0o1777)
        #expect(throws: OSError.self) { _ = try DaemonLock.acquire(directory: directory, socket: "/run/deskd.sock") }
    }

    @Test func theHoldersWordsAreReadWithCare() {
        #expect(DaemonLock.parse(Array("12\n/run/deskd/deskd.sock\n".utf8), directory: "/run/deskd").socket == "/run/deskd/deskd.sock")
        let odd = DaemonLock.parse(Array("-3\nrelative\u{1B}[2J\n".utf8), directory: "/run/deskd")
        #expect(odd.pid == nil && odd.socket == nil)
        #expect(odd.description.hasPrefix("another deskd already runs on /run/deskd"))
    }
}
