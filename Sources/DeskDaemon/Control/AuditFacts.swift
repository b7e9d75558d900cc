import DeskCore

/// What the audit trail says a request asked: from its verb's typed request (its arguments
/// checked) when it decoded, and for a request refused for its arguments, only what can be
/// said of one without them (the display and user it named).
struct AuditFacts: Equatable {
    var display: Display?
    var user: String?
    /// The arguments worth keeping, in the order the trail writes them: "desktop=xfce", "ttl=600s".
    var details: [String] = []
    var dryRun = false
    var viewOnly = false
    var all = false
    /// A url request's action, which its outcome names.
    var url: UrlRequest.Action?
    var extendSeconds: Int?
    /// A start for the browser, which hands out a link too.
    var startsWithLink = false

    init(_ request: ControlRequest) {
        switch request {
        case .start(let start):
            user = start.user
            display = start.display
            details.append("desktop=\(start.desktop ?? "default")")
            if let geometry = start.geometry { details.append("geometry=\(geometry)") }
            // start --web hands out a browser link too: as much a credential as url's, so as traced.
            if let ttl = start.linkTTLSeconds {
                startsWithLink = true
                details.append("web ttl=\(ttl)s")
            }
        case .kill(let kill):
            switch kill {
            case .display(let named): display = named
            case .user(let name): user = name
            case .all: all = true
            }
        case .reap(let reap):
            user = reap.user
            dryRun = reap.dryRun
            details.append("idle=\(reap.idleSeconds)s")
        case .passwd(let passwd):
            display = passwd.display
            viewOnly = passwd.viewOnly
        case .url(let url):
            display = url.display
            self.url = url.action
            switch url.action {
            case .mint(let viewOnly, let ttl, let viewers):
                self.viewOnly = viewOnly
                details.append("ttl=\(ttl)s")
                if !viewers.isEmpty { details.append("for=\(viewers.prefix(BrowserLink.maximumViewers).map { String($0.prefix(64)) }.joined(separator: ","))") }
            case .revoke(let share?):
                details.append("share=\(share)")
            case .revoke(nil), .shares:
                break
            }
        case .extend(let extend):
            display = extend.display
            extendSeconds = extend.seconds
        case .ping, .list, .show, .probe, .history, .status, .logs, .metrics, .desktops:
            break
        }
    }

    /// A request refused before it became its verb's: the display and user it named, nothing
    /// else it sent (its arguments were what was wrong).
    init(refused wire: Request) {
        display = wire.display
        user = wire.user.map { String($0.prefix(64)) }
    }
}
