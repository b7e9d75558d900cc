import DeskCore
import DeskFrontProtocol
import DeskLinux
import Glibc
import Synchronization

/// deskd-web's connection to deskd: calls that wait for their answer, notes that do not, and
/// deskd's own events (setup, listeners, relays to close) handed to `onEvent` in order.
public final class DeskdLink: Sendable {
    private let socket: RecordSocket

    private struct State {
        var nextCall: UInt64 = 1
        var pending: [UInt64: CheckedContinuation<(FrontEvent, [Int32])?, Never>] = [:]
        var ended = false
    }

    private let state = Mutex(State())

    public init(socket: RecordSocket) {
        self.socket = socket
    }

    /// Sends the request `make` builds with a fresh call number, and waits for deskd's answer
    /// (with its descriptors, the caller's to close); nil once the link is down.
    func call(_ make: (UInt64) -> FrontRequest) async -> (FrontEvent, [Int32])? {
        let call = state.withLock { state -> UInt64 in
            defer { state.nextCall += 1 }
            return state.nextCall
        }
        let request = make(call)
        let bytes = FrontWire.encode(request)
        // Over deskd's limit, deskd would cut the whole link (every browser) off: not sent at all.
        guard bytes.count <= FrontWire.requestLimit else { return nil }
        return await withCheckedContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.ended else { return false }
                state.pending[call] = continuation
                return true
            }
            guard accepted else { return continuation.resume(returning: nil) }
            do { try socket.send(bytes, wait: false) } catch {
                if let waiting = state.withLock({ $0.pending.removeValue(forKey: call) }) { waiting.resume(returning: nil) }
                end()
            }
        }
    }

    /// The answer alone: a descriptor deskd should not have sent with it is closed.
    func answer(_ make: (UInt64) -> FrontRequest) async -> FrontEvent? {
        guard let (event, descriptors) = await call(make) else { return nil }
        for fd in descriptors { close(fd) }
        return event
    }

    /// A request with no answer.
    func tell(_ request: FrontRequest) {
        do { try socket.send(FrontWire.encode(request), wait: false) } catch { end() }
    }

    /// Reads deskd's events until the link ends, on the calling thread: answers go to their
    /// callers, the rest to `onEvent`. Blocking; run it on a thread of its own.
    public func readEvents(_ onEvent: (FrontEvent, [Int32]) -> Void) {
        defer { end() }
        var buffer: [UInt8] = []
        while true {
            guard let received = try? socket.receive(limit: FrontWire.eventLimit, using: &buffer) else { return }
            guard let event = FrontWire.decode(FrontEvent.self, from: received.bytes) else {
                for fd in received.descriptors { close(fd) }
                return
            }
            if let call = event.call {
                if let waiting = state.withLock({ $0.pending.removeValue(forKey: call) }) {
                    waiting.resume(returning: (event, received.descriptors))
                } else {
                    for fd in received.descriptors { close(fd) }
                }
            } else {
                onEvent(event, received.descriptors)
            }
        }
    }

    /// Ends the link: waiting calls get nil, and the reader returns.
    public func end() {
        let waiting = state.withLock { state in
            state.ended = true
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        socket.shutdown()
        for continuation in waiting { continuation.resume(returning: nil) }
    }
}

extension FrontEvent {
    /// The call an answer answers; nil for deskd's own events.
    var call: UInt64? {
        switch self {
        case .exchanged(let call, _, _, _), .redeemed(let call, _, _), .scraped(let call, _),
             .loginStep(let call, _), .identity(let call, _), .watched(let call, _, _, _), .answered(let call, _, _),
             .filed(let call, _, _): call
        case .setup, .listen, .disconnect: nil
        }
    }
}

/// The gateway's authority in deskd-web: deskd, asked over the link.
public struct RemoteAuthority: GatewayAuthority {
    let link: DeskdLink

    public init(link: DeskdLink) {
        self.link = link
    }

    public func exchange(token: String) async -> (cookie: String, viewOnly: Bool)? {
        guard case .granted(let cookie, let viewOnly) = await exchange(token: token, portalCookie: nil, signedOn: nil) else { return nil }
        return (cookie, viewOnly)
    }

    public func exchange(token: String, portalCookie: String?, signedOn: String?) async -> LinkExchange {
        switch await link.answer({ .exchange(call: $0, token: token, viewer: portalCookie, signedOn: signedOn) }) {
        case .exchanged(_, let cookie?, let viewOnly, _)?: .granted(cookie: cookie, viewOnly: viewOnly)
        case .exchanged(_, nil, _, true)?: .forNamedViewers
        default: .refused
        }
    }

    public func redeem(cookie: String) async -> Redemption? {
        guard let (event, descriptors) = await link.call({ .redeem(call: $0, cookie: cookie) }) else { return nil }
        switch event {
        case .redeemed(_, let grant?, nil) where descriptors.count == 1:
            return Redemption(grant: grant, desktop: .success(descriptors[0]))
        case .redeemed(_, let grant?, let refusal?):
            for fd in descriptors { close(fd) }
            return Redemption(grant: grant, desktop: .failure(refusal))
        case .redeemed(_, let grant?, nil):
            for fd in descriptors { close(fd) }
            return Redemption(grant: grant, desktop: .failure(DesktopRefusal("deskd granted the relay but passed no desktop socket")))
        default:
            for fd in descriptors { close(fd) }
            return nil
        }
    }

    public func relayEnded(_ grant: GatewayGrant) {
        link.tell(.relayEnded(relay: grant.relay))
    }
}

extension RemoteAuthority: PortalAuthority {
    public func login(user: String, password: String, from peer: WebPeer) async -> LoginStep? {
        guard case .loginStep(_, let step)? = await link.answer({
            .login(call: $0, user: user, password: password, address: peer.address, client: peer.client)
        }) else { return nil }
        return step
    }

    public func answer(attempt: String, text: String, from peer: WebPeer) async -> LoginStep? {
        guard case .loginStep(_, let step)? = await link.answer({
            .loginAnswer(call: $0, attempt: attempt, answer: text, address: peer.address, client: peer.client)
        }) else { return nil }
        return step
    }

    public func singleSignOn(user: String, proxy: String, from peer: WebPeer) async -> LoginStep? {
        guard case .loginStep(_, let step)? = await link.answer({
            .singleSignOn(call: $0, user: user, proxy: proxy, address: peer.address, client: peer.client)
        }) else { return nil }
        return step
    }

    public func identify(cookie: String, touch: Bool) async -> WebIdentity? {
        guard case .identity(_, let identity)? = await link.answer({ .identify(call: $0, cookie: cookie, touch: touch) }) else { return nil }
        return identity
    }

    public func watch(cookie: String, after: UInt64?, signedOn: String?) async -> WatchAnswer? {
        guard case .watched(_, let generation, let loggedIn, let account)? = await link.answer({ .watch(call: $0, cookie: cookie, after: after, signedOn: signedOn) })
        else { return nil }
        return WatchAnswer(generation: generation, loggedIn: loggedIn, account: account)
    }

    public func logout(cookie: String) async {
        _ = await link.answer { .logout(call: $0, cookie: cookie) }
    }

    public func request(cookie: String, csrf: String, body: String, touch: Bool, signedOn: String?) async -> (status: Int, body: String)? {
        guard case .answered(_, let status, let text)? = await link.answer({
            .request(call: $0, cookie: cookie, csrf: csrf, body: body, touch: touch, signedOn: signedOn)
        }) else { return nil }
        return (status, text)
    }
}

extension RemoteAuthority: FileAuthority {
    public func files(cookie: String, csrf: String?, session: String, call: FileCall, signedOn: String?) async -> FileReply? {
        guard let (event, descriptors) = await link.call({
            .files(call: $0, cookie: cookie, csrf: csrf, session: session, request: call, signedOn: signedOn)
        }) else { return nil }
        guard case .filed(_, let transfer, let answer?) = event, descriptors.count <= 1, (transfer == nil) == descriptors.isEmpty else {
            for fd in descriptors { close(fd) }
            return nil
        }
        return FileReply(answer: answer, transfer: transfer, descriptor: descriptors.first)
    }

    public func transferEnded(_ transfer: UInt64, bytes: UInt64, outcome: TransferOutcome) async -> FileAnswer? {
        guard case .filed(_, _, let answer)? = await link.answer({ .transferEnded(call: $0, transfer: transfer, bytes: bytes, outcome: outcome) }) else { return nil }
        return answer
    }
}
