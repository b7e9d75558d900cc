import DeskCore
@testable import DeskLinux
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
            #expect(DisplaySnapshot.take().occupancy(of: display) == .unusableLock("/tmp/.X1987-lock is a FIFO"))
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
        Self.withLock(display, { _ = FileManager.default.createFile(atPath: $0, contents: Data("garbage".utf8)) }) {
            #expect(XLockFile.read(display) == .stale(pid: nil))
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
