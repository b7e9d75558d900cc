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
    /// Something listens on the X socket, though no lock says so.
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
        case .xSocketListening: "something listens on its X socket"
        case .tcpPortBound(let port): "TCP port \(port) is already bound"
        case .unusableLock(let what): "its lock file \(what)"
        }
    }
}

/// Decides which display a start lands on. Pure: the occupancy comes from outside.
public struct DisplayAllocator: Sendable {
    public let range: ClosedRange<Int>

    public init(range: ClosedRange<Int> = Display.supportedRange) {
        self.range = range
    }

    /// The requested display if it is usable, otherwise the lowest usable one in range.
    public func choose(requested: Display?, skipping tried: Set<Display> = [], occupancy: (Display) -> DisplayOccupancy) throws(DeskError) -> Display {
        if let requested {
            guard range.contains(requested.number) else {
                throw DeskError(.invalidDisplay, "display \(requested) is out of range; use :\(range.lowerBound) to :\(range.upperBound).")
            }
            let state = occupancy(requested)
            guard state.isUsable, !tried.contains(requested) else {
                throw DeskError(.displayBusy, "display \(requested) is in use: \(state.reason); pick another or leave out --display.")
            }
            return requested
        }
        for number in range {
            let display = Display(number)
            if !tried.contains(display), occupancy(display).isUsable { return display }
        }
        throw DeskError(.noFreeDisplay, "every display from :\(range.lowerBound) to :\(range.upperBound) is in use; kill an idle session (deskctl reap) and try again.")
    }
}
