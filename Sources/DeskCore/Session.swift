import Foundation

/// The life of a session as deskd sees it.
public enum SessionState: String, Codable, Sendable {
    /// Xvnc launched, RFB not yet answering.
    case starting
    /// Xvnc completes an RFB handshake.
    case ready
    /// Xvnc is gone.
    case exited
    /// Xvnc is alive but does not complete a handshake in time.
    case unresponsive
}

/// One desktop session: what deskd persists and what `list --json` shows.
///
/// JSON keys are the scripting contract: stable and camelCase.
public struct Session: Codable, Sendable, Equatable {
    /// Random, unique per start; names the session's cgroup and marks its processes.
    public var id: String
    public var user: String
    public var uid: UInt32
    public var gid: UInt32
    public var display: Display
    public var rfbPort: Int
    /// Xvnc's pid.
    public var pid: Int32
    /// Xvnc's start time in clock ticks since boot (/proc/PID/stat field 22): with the pid,
    /// it tells a re-adopted Xvnc from an unrelated process that got the same pid.
    public var pidStartTicks: UInt64
    /// The Xvnc executable, checked against /proc/PID/exe on re-adoption.
    public var executable: String
    public var desktopPid: Int32?
    public var state: SessionState
    public var startedAt: Date
    public var desktop: String
    public var geometry: Geometry
    public var depth: Int
    /// Viewers connected now.
    public var clients: Int
    /// When the last viewer left; nil while one is connected or if none ever came.
    public var lastClientAt: Date?
    /// Seconds without a viewer (since the start if none ever came); 0 while one is connected.
    public var idleSeconds: Int
    /// Only in a start reply (and only to the owner or an admin); never persisted.
    public var password: String?
    /// Only in a `passwd --view-only` reply: the password that may watch but not type.
    public var viewOnlyPassword: String?

    public init(
        id: String, user: String, uid: UInt32, gid: UInt32, display: Display, pid: Int32, pidStartTicks: UInt64,
        executable: String, desktopPid: Int32? = nil, state: SessionState, startedAt: Date, desktop: String,
        geometry: Geometry, depth: Int, clients: Int = 0, lastClientAt: Date? = nil, idleSeconds: Int = 0, password: String? = nil
    ) {
        self.id = id
        self.user = user
        self.uid = uid
        self.gid = gid
        self.display = display
        self.rfbPort = display.rfbPort
        self.pid = pid
        self.pidStartTicks = pidStartTicks
        self.executable = executable
        self.desktopPid = desktopPid
        self.state = state
        self.startedAt = startedAt
        self.desktop = desktop
        self.geometry = geometry
        self.depth = depth
        self.clients = clients
        self.lastClientAt = lastClientAt
        self.idleSeconds = idleSeconds
        self.password = password
    }

    /// How to reach the session from another machine.
    public func connectHints(host: String) -> ConnectHints {
        ConnectHints(
            sshTunnel: "ssh -L \(rfbPort):localhost:\(rfbPort) \(user)@\(host)",
            viewer: "vncviewer localhost:\(rfbPort)"
        )
    }
}

public struct ConnectHints: Codable, Sendable, Equatable {
    public var sshTunnel: String
    public var viewer: String
}

extension JSONEncoder {
    /// The encoder for everything deskd writes: ISO 8601 dates, sorted keys for stable diffs.
    public static var desk: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension JSONDecoder {
    public static var desk: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
