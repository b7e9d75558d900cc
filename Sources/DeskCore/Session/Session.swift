import FoundationEssentials

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
    /// The RFB TCP port, only when deskd runs Xvnc with TCP on (`network.listen`).
    public var rfbPort: Int?
    /// The RFB Unix socket, the owner's alone (0600 in a 0700 directory of theirs); viewers reach
    /// it through `ssh -L PORT:SOCKET user@host`. nil only for sessions listening on TCP.
    public var rfbSocket: String?
    /// The display server's pid: Xvnc's, or a Wayland desktop's wayvnc (whose launcher started
    /// the compositor).
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
    /// A desktop on a compute node, as a Slurm job (`start --slurm`): the job as squeue saw it
    /// last. nil for a desktop on this host. Its `display` is then deskd's handle for it on this
    /// host (its Xvnc's own display number on the node is in `rfbSocket`'s directory name only).
    public var slurm: SlurmJob?
    /// What the desktop draws on (the JSON leaves Xvnc out, as before there was another).
    public var displayServer = DisplayServerKind.xvnc

    /// What differs with the kind of server the desktop draws on.
    public var server: any DisplayServer.Type { displayServer.server }

    public init(
        id: String, user: String, uid: UInt32, gid: UInt32, display: Display, endpoint: RFBEndpoint, pid: Int32, pidStartTicks: UInt64,
        executable: String, desktopPid: Int32? = nil, state: SessionState, startedAt: Date, desktop: String,
        geometry: Geometry, depth: Int, clients: Int = 0, lastClientAt: Date? = nil, idleSeconds: Int = 0, password: String? = nil
    ) {
        self.id = id
        self.user = user
        self.uid = uid
        self.gid = gid
        self.display = display
        switch endpoint {
        case .unixSocket(let path): self.rfbSocket = path
        case .tcp(let port): self.rfbPort = port
        }
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

    /// "socket /run/deskd/displays/3/rfb.sock" or "port 5903", for a sentence.
    public var endpointDescription: String {
        if let slurm { return slurm.node.map { "node \($0) (job \(slurm.jobId))" } ?? "job \(slurm.jobId), not yet on a node" }
        if let rfbSocket { return "socket \(rfbSocket)" }
        return rfbPort.map { "port \($0)" } ?? "no endpoint"
    }

    /// Where a viewer on this host reaches the session.
    public var endpoint: RFBEndpoint? {
        if let rfbSocket { return .unixSocket(path: rfbSocket) }
        return rfbPort.map(RFBEndpoint.tcp(port:))
    }

    /// `connectHints`, once there is somewhere to connect to: a cluster desktop still queued has none.
    public func reachableHints(host: String) -> ConnectHints? {
        if let slurm, slurm.node == nil || rfbSocket == nil { return nil }
        return connectHints(host: host)
    }

    /// How to reach the session from another machine: OpenSSH forwards a local port to the
    /// session's socket (sshd connects as the logged-in owner, the only one who may), and any
    /// viewer connects to that port. The local port is 5900+N by habit; any free one works.
    public func connectHints(host: String) -> ConnectHints {
        if let slurm, let node = slurm.node, let rfbSocket {
            // The socket is on the node and the owner's alone: ssh through the login node to it.
            let local = 5900 + min(display.number, 99)
            return ConnectHints(sshTunnel: "ssh -J \(user)@\(host) -L \(local):\(rfbSocket) \(user)@\(node)", viewer: "vncviewer localhost:\(local)")
        }
        // The viewer's end of the tunnel: the classic 5900+N up to :99; past it, 20000+N, clear
        // of X's 6000-6063 on the viewer's own machine.
        let local = display.number <= 99 ? display.rfbPort() : 20000 + display.number
        let target = rfbSocket ?? "localhost:\(rfbPort ?? local)"
        return ConnectHints(
            sshTunnel: "ssh -L \(local):\(target) \(user)@\(host)",
            viewer: "vncviewer localhost:\(local)"
        )
    }
}
