/// What occupies a display, as seen from the host a moment ago.
public enum DisplayOccupancy: Equatable, Sendable {
    case free
    /// deskd already holds it (a live or starting session).
    case heldByDeskd
    /// `/tmp/.X<n>-lock` names a live process: another X server owns the display.
    case liveLock(pid: Int32)
    /// The lock names a dead process. Xvnc running as a user cannot remove another user's lock
    /// in sticky /tmp, so deskd reclaims it as root before the start.
    case staleLock(pid: Int32?)
    /// Something listens on the X socket, or holds its abstract name, though no lock says so.
    case xSocketListening
    /// Something else has bound the RFB or X11 TCP port.
    case tcpPortBound(Int)
    /// The lock file is not one an X server wrote: a FIFO, a socket, a symlink, a leased or
    /// oversized file. Whoever planted it may not stall deskd or Xvnc; the display is skipped.
    case unusableLock(String)

    public var isUsable: Bool {
        switch self {
        case .free, .staleLock: true
        default: false
        }
    }

    /// Why a display cannot be used, as the end of a sentence.
    public var reason: String {
        switch self {
        case .free: "it is free"
        case .heldByDeskd: "deskd already runs a session there"
        case .liveLock(let pid): "another X server (pid \(pid)) holds its lock"
        case .staleLock: "it has a stale lock"
        case .xSocketListening: "something listens on its X socket or holds its name"
        case .tcpPortBound(let port): "TCP port \(port) is already bound"
        case .unusableLock(let what): "its lock file \(what)"
        }
    }
}
