import DeskPOSIX
import DeskCore
@testable import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// Lock files planted as something no X server writes make their display unusable, and are read
/// in bounded time. Uses displays far above any real one (the lock path is fixed by X).
@Suite(.serialized) struct XLockFileTests {
    static func withLock(_ display: Display, _ plant: (String) -> Void, _ body: () -> Void) {
        unlink(display.lockPath)
        plant(display.lockPath)
        defer { unlink(display.lockPath) }
        body()
    }

    @Test func aFIFOASymlinkAndASocketAreUnusable() {
        let display = Display(1987)
        Self.withLock(display, { _ = mkfifo($0, 0o644) }) {
            #expect(XLockFile.read(display) == .unusable("/tmp/.X1987-lock is a FIFO"))
            #expect(DisplaySnapshot.take(displays: 1...2000).occupancy(of: display) == .unusableLock("/tmp/.X1987-lock is a FIFO"))
        }
        Self.withLock(display, { _ = symlink("/etc/passwd", $0) }) {
            #expect(XLockFile.read(display) == .unusable("/tmp/.X1987-lock is a symlink"))
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        Self.withLock(display, { path in _ = UnixSocketAddress(path)!.withSockaddr { bind(fd, $0, $1) } }) {
            #expect(XLockFile.read(display) == .unusable("/tmp/.X1987-lock is a socket"))
        }
    }

    @Test func aLiveAStaleAndAGarbageLockAreWhatTheXServerWouldSay() {
        let display = Display(1988)
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("\(String(getpid()).leftPadded(10))\n".utf8)) }) {
            #expect(XLockFile.read(display) == .live(pid: getpid()))
        }
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("2147483646\n".utf8)) }) {
            #expect(XLockFile.read(display) == .stale(pid: 2147483646))
            // release removes only a lock that names the given (dead) server.
            XLockFile.release(display, ownedBy: 12345)
            #expect(access(display.lockPath, F_OK) == 0)
            XLockFile.release(display, ownedBy: 2147483646)
            #expect(access(display.lockPath, F_OK) != 0)
        }
        // wlroots writes its Xwayland's lock as ten characters and a NUL.
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("\(String(getpid()).leftPadded(10))\0".utf8)) }) {
            #expect(XLockFile.read(display) == .live(pid: getpid()))
            XLockFile.reclaim(display, ownedBy: getuid())
            #expect(access(display.lockPath, F_OK) == 0, "a live lock was reclaimed")
        }
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("2147483646\0".utf8)) }) {
            // Only the owner's stale lock goes.
            XLockFile.reclaim(display, ownedBy: getuid() &+ 1)
            #expect(access(display.lockPath, F_OK) == 0, "another owner's lock was reclaimed")
            XLockFile.reclaim(display, ownedBy: getuid())
            #expect(access(display.lockPath, F_OK) != 0)
        }
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("garbage".utf8)) }) {
            #expect(XLockFile.read(display) == .stale(pid: nil))
        }
    }

    /// A user's file naming a live process of someone else's (pid 1, say) is no X server's lock:
    /// it is cleared like a stale one, so a hundred of them cannot stop every start. Root's own
    /// locks, and a user's naming their own process, stay live.
    @Test func aLockNamingAnotherUsersProcessIsNotLive() {
        let display = Display(1988)
        let planted: (String) -> Void = { path in
            _ = FileManager.default.createFile(atPath: path, contents: Data("         1\n".utf8))
            chown(path, 54321, 54321)
        }
        Self.withLock(display, planted) {
            #expect(XLockFile.read(display) == .stale(pid: 1))
        }
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("         1\n".utf8)) }) {
            #expect(getuid() != 0 || XLockFile.read(display) == .live(pid: 1))
        }
    }

    /// What an X server writes is ten characters and a newline; anything that is no positive
    /// pid is a stale lock (never a kill(-1) or kill(0)), and an oversized file is no X server's.
    @Test func whatIsNoPositivePidIsStaleAndAnOversizedLockUnusable() {
        let display = Display(1989)
        for garbage in ["        -1\n", "         0\n", "", "\n", "4242 4243\n", "0x1234\n", "99999999999999999999\n"] {
            Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data(garbage.utf8)) }) {
                #expect(XLockFile.read(display) == .stale(pid: nil), "lock \(garbage.debugDescription)")
            }
        }
        // Padding on either side, as X and hand-written locks have it.
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("\(getpid())\n\n".utf8)) }) {
            #expect(XLockFile.read(display) == .live(pid: getpid()))
        }
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data(String(repeating: " ", count: 65).utf8)) }) {
            #expect(XLockFile.read(display) == .unusable("/tmp/.X1989-lock is 65 bytes, more than the 64 expected"))
        }
        Self.withLock(display, { _ = mkdir($0, 0o700) }) {
            #expect(XLockFile.read(display) == .unusable("/tmp/.X1989-lock is a directory"))
            rmdir(display.lockPath)
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
