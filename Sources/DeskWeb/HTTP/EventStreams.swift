import DeskFrontProtocol
import Synchronization

/// The portal's live-update streams (`GET /api/events`), which a page holds open for as long as it
/// is shown: bounded per login, per account and in all, so that no account can hold the front's
/// connections with them, and pages, links and logins always have room. Each stream also has a
/// lifetime, after which it ends and the page's EventSource comes back (a page that is still
/// shown is counted again; one that is not, is not).
final class EventStreams: Sendable {
    struct Limits: Sendable {
        /// Streams of one login (one browser): a few tabs.
        var perLogin = 4
        /// Streams of one account, over all its logins.
        var perAccount = 8
        /// Streams in all: half the gateway's connections, so the other half is for everything else.
        var total: Int
        /// How long one stream runs before it ends and the page comes back.
        var lifetime: Duration = .seconds(1800)
    }

    /// Why a stream was not opened, as the page's one sentence says.
    enum Refusal: Equatable {
        case login(Int), account(Int), total(Int)

        var sentence: String {
            switch self {
            case .login(let limit): "This browser already has \(limit) portal pages with live updates open; close one and reload."
            case .account(let limit): "Your account already has \(limit) portal pages with live updates open; close some and reload."
            case .total(let limit): "The portal is serving \(limit) live updates, its limit; the page will try again in a moment."
            }
        }
    }

    let limits: Limits
    private struct Counts {
        var byLogin: [String: Int] = [:]
        var byAccount: [UInt32: Int] = [:]
        var total = 0
    }
    private let counts = Mutex(Counts())

    init(limits: Limits) {
        self.limits = limits
    }

    /// Counts a stream of login `cookie` (of `account`) in, or says which bound it is over.
    func open(cookie: String, account: UInt32) -> Refusal? {
        counts.withLock { counts in
            if counts.byLogin[cookie, default: 0] >= limits.perLogin { return .login(limits.perLogin) }
            if counts.byAccount[account, default: 0] >= limits.perAccount { return .account(limits.perAccount) }
            if counts.total >= limits.total { return .total(limits.total) }
            counts.byLogin[cookie, default: 0] += 1
            counts.byAccount[account, default: 0] += 1
            counts.total += 1
            return nil
        }
    }

    /// A stream `open` counted in has ended.
    func close(cookie: String, account: UInt32) {
        counts.withLock { counts in
            counts.byLogin[cookie] = counts.byLogin[cookie].flatMap { $0 > 1 ? $0 - 1 : nil }
            counts.byAccount[account] = counts.byAccount[account].flatMap { $0 > 1 ? $0 - 1 : nil }
            counts.total = max(0, counts.total - 1)
        }
    }

    var open: Int { counts.withLock { $0.total } }
}
