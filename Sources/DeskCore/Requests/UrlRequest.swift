/// `url`: a one-time browser link to a session; every link to it, or one share, taken back; or
/// its shares listed.
public struct UrlRequest: ControlVerb {
    public static let command = Command.url

    public enum Action: Sendable, Equatable {
        /// A link usable once within `ttlSeconds`; `viewOnly`, one that watches and takes no input;
        /// with `viewers`, one only those accounts may use (each logged in to the portal).
        case mint(viewOnly: Bool, ttlSeconds: Int, viewers: [String] = [])
        /// Every unused link opens nothing from now on, and every browser showing it is closed;
        /// with `share`, only that share's link and browser.
        case revoke(share: String? = nil)
        /// The session's unused links and the browsers its links opened.
        case shares
    }

    public var display: Display
    public var action: Action

    public init(display: Display, action: Action) {
        self.display = display
        self.action = action
    }

    public init(wire: Request) throws(DeskError) {
        let display = try wire.requiredDisplay()
        if wire.shares == true {
            self.init(display: display, action: .shares)
        } else if wire.revoke == true {
            guard wire.share.map(Self.isPlausibleShare) ?? true else {
                throw DeskError(.badRequest, "'share' is a share's id as deskctl url --shares lists it (12 letters and digits).")
            }
            self.init(display: display, action: .revoke(share: wire.share))
        } else {
            let viewers = wire.viewers ?? []
            guard viewers.count <= BrowserLink.maximumViewers else {
                throw DeskError(.badRequest, "a link may name at most \(BrowserLink.maximumViewers) accounts, not \(viewers.count); make one link per group.")
            }
            self.init(display: display, action: .mint(viewOnly: wire.viewOnly ?? false, ttlSeconds: wire.ttlSeconds ?? BrowserLink.defaultTTLSeconds,
                                                      viewers: viewers))
        }
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
        switch action {
        case .mint(let viewOnly, let ttl, let viewers):
            wire.viewOnly = viewOnly ? true : nil
            wire.ttlSeconds = ttl
            wire.viewers = viewers.isEmpty ? nil : viewers
        case .revoke(let share):
            wire.revoke = true
            wire.share = share
        case .shares:
            wire.shares = true
        }
    }

    /// A share's id: 12 characters of base64url.
    public static func isPlausibleShare(_ text: String) -> Bool {
        text.utf8.count == 12 && text.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
