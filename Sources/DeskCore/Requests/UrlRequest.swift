/// `url`: a one-time browser link to a session, or every link to it taken back.
public struct UrlRequest: ControlVerb {
    public static let command = Command.url

    public enum Action: Sendable, Equatable {
        /// A link usable once within `ttlSeconds`; `viewOnly`, one that watches and takes no input.
        case mint(viewOnly: Bool, ttlSeconds: Int)
        /// Every unused link opens nothing from now on, and every browser showing it is closed.
        case revoke
    }

    public var display: Display
    public var action: Action

    public init(display: Display, action: Action) {
        self.display = display
        self.action = action
    }

    public init(wire: Request) throws(DeskError) {
        let display = try wire.requiredDisplay()
        self.init(display: display, action: wire.revoke == true
            ? .revoke : .mint(viewOnly: wire.viewOnly ?? false, ttlSeconds: wire.ttlSeconds ?? BrowserLink.defaultTTLSeconds))
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
        switch action {
        case .mint(let viewOnly, let ttl):
            wire.viewOnly = viewOnly ? true : nil
            wire.ttlSeconds = ttl
        case .revoke:
            wire.revoke = true
        }
    }
}
