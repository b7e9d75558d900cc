/// `start`: a desktop, for the caller or (an admin's request) another user.
public struct StartRequest: ControlVerb {
    public static let command = Command.start
    /// The account to start for; nil: the caller's own.
    public var user: String?
    /// nil: the lowest free display of the configured range.
    public var display: Display?
    public var geometry: Geometry?
    public var depth: Int?
    /// A valid desktop (template) name; nil: the configured default.
    public var desktop: String?
    /// `--web`: a one-time browser link to the new session too, usable once within this many
    /// seconds; nil: no link.
    public var linkTTLSeconds: Int?
    /// `--slurm`: on a compute node, as a Slurm job; nil: on this host.
    public var slurm: SlurmOptions?

    public init(user: String? = nil, display: Display? = nil, geometry: Geometry? = nil, depth: Int? = nil, desktop: String? = nil,
                linkTTLSeconds: Int? = nil, slurm: SlurmOptions? = nil) {
        self.user = user
        self.display = display
        self.geometry = geometry
        self.depth = depth
        self.desktop = desktop
        self.linkTTLSeconds = linkTTLSeconds
        self.slurm = slurm
    }

    public init(wire: Request) throws(DeskError) {
        self.user = wire.user
        self.display = try wire.display?.checked()
        self.geometry = try wire.geometry.map { text throws(DeskError) in try Geometry(parsing: text) }
        self.depth = try wire.depth.map { depth throws(DeskError) in try ColorDepth.validate(depth) }
        self.desktop = try wire.desktop.map { name throws(DeskError) in try XstartupTemplate.validate(desktopName: name) }
        self.linkTTLSeconds = wire.web == true ? wire.ttlSeconds ?? BrowserLink.defaultTTLSeconds : nil
        self.slurm = try wire.slurm?.checked()
    }

    public func fill(_ wire: inout Request) {
        wire.user = user
        wire.display = display
        wire.geometry = geometry?.description
        wire.depth = depth
        wire.desktop = desktop
        if let linkTTLSeconds {
            wire.web = true
            wire.ttlSeconds = linkTTLSeconds
        }
        wire.slurm = slurm
    }
}
