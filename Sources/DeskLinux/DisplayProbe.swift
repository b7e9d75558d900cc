import DeskCore
import Glibc

/// Looks at the host to say what occupies each X display.
///
/// One snapshot reads /proc/net once, so probing :1...:99 costs three file reads, not 99 connects.
public struct DisplaySnapshot: Sendable {
    let listeningTCPPorts: Set<Int>
    let listeningUnixPaths: Set<String>

    public static func take() -> DisplaySnapshot {
        DisplaySnapshot(
            listeningTCPPorts: Set(ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen]).map(\.localPort)),
            listeningUnixPaths: ProcFS.listeningUnixSocketPaths()
        )
    }

    public func occupancy(of display: Display) -> DisplayOccupancy {
        switch XLockFile.read(display) {
        case .live(let pid): return .liveLock(pid: pid)
        case .stale(let pid): return .staleLock(pid: pid)
        case .absent: break
        }
        if listeningUnixPaths.contains(display.socketPath) || listeningUnixPaths.contains("@" + display.socketPath) {
            return .xSocketListening
        }
        for port in [display.rfbPort, display.x11Port] where listeningTCPPorts.contains(port) {
            return .tcpPortBound(port)
        }
        return .free
    }
}

/// The X server's own lock, `/tmp/.X<n>-lock`: its pid as ten characters and a newline.
public enum XLockFile {
    public enum Status: Equatable {
        case absent
        case live(pid: pid_t)
        /// The pid is dead, or the file is unreadable garbage no X server wrote.
        case stale(pid: pid_t?)
    }

    public static func read(_ display: Display) -> Status {
        guard let bytes = ProcFS.read(display.lockPath, limit: 64) else {
            // A lock we cannot open (but that exists) is someone's: treat it as live and leave it be.
            return access(display.lockPath, F_OK) == 0 ? .live(pid: 0) : .absent
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: " \n")
        guard let pid = pid_t(text), pid > 0 else { return .stale(pid: nil) }
        // Like the X server: a pid we may not signal (EPERM) is alive.
        if kill(pid, 0) == 0 || errno == EPERM, ProcFS.isAlive(pid) { return .live(pid: pid) }
        return .stale(pid: pid)
    }

    /// Removes a stale lock and the dead server's socket. Both live in sticky /tmp, where only
    /// root or the owner may unlink; unlink never follows a symlink, so this is safe as root.
    public static func reclaim(_ display: Display) {
        guard case .stale = read(display) else { return }
        unlink(display.lockPath)
        if !DisplaySnapshot.take().listeningUnixPaths.contains(display.socketPath) {
            unlink(display.socketPath)
        }
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var slice = Substring(self)
        while let first = slice.first, chars.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, chars.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
