import FoundationEssentials

/// Session's JSON, written out rather than synthesized: the same keys and values as the
/// synthesized form, but each field through the container's concrete overloads (String, Int,
/// UInt32…) instead of the generic path, which boxes every value and asks the runtime about its
/// conformances. A `list --all` of two hundred sessions is mostly this, on both ends of the
/// socket. Dates still go through the coder's date strategy (InternetTime with `desk`).
extension Session {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, user, uid, gid, display, rfbPort, rfbSocket, pid, pidStartTicks, executable, desktopPid, state,
             startedAt, desktop, geometry, depth, clients, lastClientAt, idleSeconds, password, viewOnlyPassword, slurm, displayServer
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        user = try c.decode(String.self, forKey: .user)
        uid = try c.decode(UInt32.self, forKey: .uid)
        gid = try c.decode(UInt32.self, forKey: .gid)
        display = Display(try c.decode(Int.self, forKey: .display))
        rfbPort = try c.decodeIfPresent(Int.self, forKey: .rfbPort)
        rfbSocket = try c.decodeIfPresent(String.self, forKey: .rfbSocket)
        pid = try c.decode(Int32.self, forKey: .pid)
        pidStartTicks = try c.decode(UInt64.self, forKey: .pidStartTicks)
        executable = try c.decode(String.self, forKey: .executable)
        desktopPid = try c.decodeIfPresent(Int32.self, forKey: .desktopPid)
        let stateName = try c.decode(String.self, forKey: .state)
        guard let state = SessionState(rawValue: stateName) else {
            throw DecodingError.dataCorruptedError(forKey: .state, in: c, debugDescription: "'\(stateName)' is not a session state")
        }
        self.state = state
        startedAt = try c.decode(Date.self, forKey: .startedAt)
        desktop = try c.decode(String.self, forKey: .desktop)
        let geometryText = try c.decode(String.self, forKey: .geometry)
        do { geometry = try Geometry(parsing: geometryText) } catch {
            throw DecodingError.dataCorruptedError(forKey: .geometry, in: c, debugDescription: error.message)
        }
        depth = try c.decode(Int.self, forKey: .depth)
        clients = try c.decode(Int.self, forKey: .clients)
        lastClientAt = try c.decodeIfPresent(Date.self, forKey: .lastClientAt)
        idleSeconds = try c.decode(Int.self, forKey: .idleSeconds)
        password = try c.decodeIfPresent(String.self, forKey: .password)
        viewOnlyPassword = try c.decodeIfPresent(String.self, forKey: .viewOnlyPassword)
        slurm = try c.decodeIfPresent(SlurmJob.self, forKey: .slurm)
        if let kind = try c.decodeIfPresent(String.self, forKey: .displayServer) {
            guard let server = DisplayServerKind(rawValue: kind) else {
                throw DecodingError.dataCorruptedError(forKey: .displayServer, in: c, debugDescription: "'\(kind)' is not a display server")
            }
            displayServer = server
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(user, forKey: .user)
        try c.encode(uid, forKey: .uid)
        try c.encode(gid, forKey: .gid)
        try c.encode(display.number, forKey: .display)
        if let rfbPort { try c.encode(rfbPort, forKey: .rfbPort) }
        if let rfbSocket { try c.encode(rfbSocket, forKey: .rfbSocket) }
        try c.encode(pid, forKey: .pid)
        try c.encode(pidStartTicks, forKey: .pidStartTicks)
        try c.encode(executable, forKey: .executable)
        if let desktopPid { try c.encode(desktopPid, forKey: .desktopPid) }
        try c.encode(state.rawValue, forKey: .state)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(desktop, forKey: .desktop)
        try c.encode(geometry.description, forKey: .geometry)
        try c.encode(depth, forKey: .depth)
        try c.encode(clients, forKey: .clients)
        if let lastClientAt { try c.encode(lastClientAt, forKey: .lastClientAt) }
        try c.encode(idleSeconds, forKey: .idleSeconds)
        if let password { try c.encode(password, forKey: .password) }
        if let viewOnlyPassword { try c.encode(viewOnlyPassword, forKey: .viewOnlyPassword) }
        if let slurm { try c.encode(slurm, forKey: .slurm) }
        if displayServer != .xvnc { try c.encode(displayServer.rawValue, forKey: .displayServer) }
    }
}
