import DeskCore
import DeskLinux
import Glibc

/// Looks at the host to say what occupies each X display.
///
/// One snapshot asks the kernel for listeners once, so probing :1...:99 costs three sock_diag
/// dumps, not 99 connects; each dump keeps only the X sockets and the displays' ports.
public struct DisplaySnapshot: Sendable {
    let rfbPortBase: Int?
    let listeningTCPPorts: Set<Int>
    let listeningUnixPaths: Set<String>
    /// Abstract X socket names bound by a socket that does not listen (yet): a deskd-session
    /// holding its desktop's, or anyone's, who would make Xvnc or deskd-session find the name
    /// taken (issue 48: eight such names made every start fail after its eight tries).
    let heldAbstractNames: Set<String>
    /// The device of /tmp/.X11-unix, to tell a file system mounted on a display's socket name
    /// (FUSE needs no privilege): nothing can be renamed over a mount point, so the name cannot
    /// be made the desktop's link, and the display is skipped.
    let socketDirectoryDevice: UInt?

    /// `rfbPortBase`: where the displays' RFB ports start when sessions listen on TCP (then a
    /// port held by something else makes its display unusable); nil when they do not.
    public static func take(displays: ClosedRange<Int>, rfbPortBase: Int? = Display.defaultRFBPortBase) -> DisplaySnapshot {
        let first = Display(displays.lowerBound), last = Display(displays.upperBound)
        var ports = first.x11Port...last.x11Port
        if let base = rfbPortBase {
            ports = min(first.rfbPort(base: base), ports.lowerBound)...max(last.rfbPort(base: base), ports.upperBound)
        }
        // One unix_diag dump for both: the X names listened on, and abstract ones merely held.
        let xSockets = ProcFS.unixSocketsIfAvailable(states: [ProcFS.UnixSocket.listen, ProcFS.UnixSocket.unconnected], named: XSocketNames.prefixes)
        return DisplaySnapshot(
            rfbPortBase: rfbPortBase,
            listeningTCPPorts: Set(ProcFS.tcpSockets(states: [ProcFS.TCPSocket.listen], localPorts: ports).map(\.localPort)),
            listeningUnixPaths: xSockets.map { Set($0.filter { $0.state == ProcFS.UnixSocket.listen }.map(\.name)) }
                ?? ProcFS.listeningUnixSocketPaths(prefixes: XSocketNames.prefixes),
            heldAbstractNames: Set((xSockets ?? []).filter { $0.state == ProcFS.UnixSocket.unconnected && $0.name.hasPrefix("@") }.map(\.name)),
            socketDirectoryDevice: device(of: XSocketDirectory.path)
        )
    }

    public func occupancy(of display: Display) -> DisplayOccupancy {
        switch XLockFile.read(display) {
        case .live(let pid): return .liveLock(pid: pid)
        case .stale(let pid): return .staleLock(pid: pid)
        case .unusable(let what): return .unusableLock(what)
        case .absent: break
        }
        if listeningUnixPaths.contains(display.socketPath) || listeningUnixPaths.contains("@" + display.socketPath)
            || heldAbstractNames.contains("@" + display.socketPath) || isMountPoint(display.socketPath) {
            return .xSocketListening
        }
        for port in [rfbPortBase.map(display.rfbPort(base:)), display.x11Port].compactMap({ $0 }) where listeningTCPPorts.contains(port) {
            return .tcpPortBound(port)
        }
        return .free
    }

    private func isMountPoint(_ path: String) -> Bool {
        guard let parent = socketDirectoryDevice, let own = Self.device(of: path) else { return false }
        return own != parent
    }

    /// The device `path` itself is on (not following a final symlink); nil if it is not there.
    static func device(of path: String) -> UInt? {
        var info = stat()
        return lstat(path, &info) == 0 ? UInt(info.st_dev) : nil
    }
}
