import DeskFrontProtocol
import DeskCore
import FoundationEssentials
import NIOCore
import NIOHTTP1

/// The web portal on the gateway's port: its page at `/`, and its JSON API under `/api/`, every
/// answer of which is deskd's (`PortalAuthority`). The API is the control protocol over HTTP:
/// `POST /api/request` takes the same request JSON as the control socket and answers with the
/// same response JSON, as the logged-in user; login, logout and the login's state are its own.
///
/// Every API request is checked for its origin: a POST must carry the gateway's own Origin (a
/// browser always sends one with a POST from script), and no request may come from another
/// site's page (a foreign Origin, or Sec-Fetch-Site: cross-site). A request that changes
/// something also carries the login's CSRF token in X-Deskd-CSRF, which deskd checks.
extension GatewayHTTPHandler {
    static let portalCookie = "deskd_web"

    func routePortal(_ request: HTTPRequestHead, path: Substring) {
        switch (request.method, path) {
        case (.GET, "/"), (.HEAD, "/"), (.GET, "/portal.js"), (.HEAD, "/portal.js"), (.GET, "/portal.css"), (.HEAD, "/portal.css"):
            guard let files = environment.portalPage else {
                return respond(request, .serviceUnavailable, body: PortalPage.missingSentence, private: true)
            }
            switch path {
            case "/portal.js": page(request, contentType: "text/javascript; charset=utf-8", body: files.script)
            case "/portal.css": page(request, contentType: "text/css; charset=utf-8", body: files.style)
            default: page(request, contentType: "text/html; charset=utf-8", body: files.html)
            }
        case (_, let api) where api.hasPrefix("/api/"):
            self.api(request, path: api)
        default:
            respond(request, .notFound, body: "Not found.\n")
        }
    }

    private func page(_ request: HTTPRequestHead, contentType: String, body: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Security-Policy", value: PortalPage.contentSecurityPolicy)
        respond(request, .ok, contentType: contentType, body: body, private: true, extraHeaders: headers)
    }

    private func api(_ request: HTTPRequestHead, path: Substring) {
        guard let portal = environment.portal else { return }
        if let (status, body) = refusalOfPortalRequest(request) {
            dropUpload()
            return answer(request, status, body)
        }
        guard !bodyTooLarge else {
            return answer(request, .payloadTooLarge, GatewayRefusal(.requestTooLarge, "The request is over 16 KiB.").json)
        }
        let text = body.map { String(buffer: $0) } ?? ""
        let cookie = RequestChecks.cookie(Self.portalCookie, in: request.headers)
        let address = self.address.address ?? "?"
        let peer = WebPeer(address: address, client: self.address.client ?? address)
        // Behind a trusted proxy that signs users on, the proxy's word names the user of every
        // request: a login of anyone else (the proxy's user changed) is not this browser's.
        let signedOn = RequestChecks.singleSignOnUser(request.headers, configuration: environment.configuration, proxy: self.address.proxy)
        let proxy = self.address.proxy ?? "?"
        if let route = FileRoute(path) {
            return routeFiles(request, route: route, cookie: cookie, signedOn: signedOn, body: text, sink: upload)
        }
        switch (request.method, path) {
        case (.POST, "/api/login"):
            guard let form = Self.decode(LoginForm.self, text), form.user.utf8.count <= 64, form.password.utf8.count <= 1024 else {
                return badRequest(request, "POST /api/login takes {\"user\": NAME, \"password\": TEXT}, a name of at most 64 bytes and a password of at most 1024.")
            }
            later(request) { await portal.login(user: form.user, password: form.password, from: peer).map(Self.loginAnswer) }
        case (.POST, "/api/login/answer"):
            guard let form = Self.decode(AnswerForm.self, text), form.attempt.utf8.count <= 64, form.answer.utf8.count <= 1024 else {
                return badRequest(request, "POST /api/login/answer takes {\"attempt\": ID, \"answer\": TEXT}, an answer of at most 1024 bytes.")
            }
            later(request) { await portal.answer(attempt: form.attempt, text: form.answer, from: peer).map(Self.loginAnswer) }
        case (.GET, "/api/session"):
            guard cookie != nil || signedOn != nil else { return answer(request, .unauthorized, Self.loggedOut) }
            later(request) {
                if let cookie, let identity = await portal.identify(cookie: cookie, touch: false), signedOn == nil || identity.user == signedOn {
                    return (.ok, Self.json(IdentityAnswer(identity: identity)), nil)
                }
                guard let signedOn else { return (.unauthorized, Self.loggedOut, nil) }
                // Signed on at the proxy and not (or no longer, or as someone else) logged in here.
                if let cookie { await portal.logout(cookie: cookie) }
                return await portal.singleSignOn(user: signedOn, proxy: proxy, from: peer).map(Self.loginAnswer)
            }
        case (.GET, "/api/events"):
            guard let cookie else { return answer(request, .unauthorized, Self.loggedOut) }
            events(request, cookie: cookie, portal: portal, signedOn: signedOn)
        case (.POST, "/api/logout"):
            later(request) {
                if let cookie { await portal.logout(cookie: cookie) }
                return (.ok, "{}", Self.clearCookie)
            }
        case (.POST, "/api/request"):
            guard let cookie else { return answer(request, .unauthorized, Self.loggedOut) }
            let csrf = request.headers["X-Deskd-CSRF"].first ?? ""
            let touch = request.headers["X-Deskd-Background"].first != "1"
            later(request) {
                guard let (status, body) = await portal.request(cookie: cookie, csrf: csrf, body: text, touch: touch, signedOn: signedOn) else { return nil }
                return (HTTPResponseStatus(statusCode: status), body, nil)
            }
        default:
            respond(request, .notFound, contentType: "application/json",
                    body: GatewayRefusal(.badRequest, "The portal's API has no \(request.method) \(path).").json, private: true)
        }
    }

    /// Why a portal API request is refused before it is read: a name the portal does not answer
    /// to, or another site's page. nil: it may go on.
    func refusalOfPortalRequest(_ request: HTTPRequestHead) -> (HTTPResponseStatus, String)? {
        // A loopback portal answers only to loopback names: a site whose name was rebound to
        // 127.0.0.1 would otherwise be its own origin here.
        guard RequestChecks.hostFits(request.headers, configuration: environment.configuration) else {
            environment.metrics.refused(.origin)
            return (.forbidden, GatewayRefusal(.permissionDenied, "This portal answers to its own address only.").json)
        }
        let sameOrigin = RequestChecks.isSameOrigin(request.headers, tls: environment.isTLS, publicOrigin: environment.configuration.publicOrigin)
        // Only the portal's own page calls its API: another site's, and a sibling of the same
        // site too (another host under the same domain, which SameSite cookies do not stop).
        let fetchSite = request.headers["Sec-Fetch-Site"].first
        let foreign = (!request.headers["Origin"].isEmpty && !sameOrigin) || fetchSite == "cross-site" || fetchSite == "same-site"
        // A request from script that changes something always carries the page's Origin.
        guard !foreign, (request.method != .POST && request.method != .PUT) || sameOrigin else {
            environment.metrics.refused(.origin)
            return (.forbidden, GatewayRefusal(.permissionDenied, "This request did not come from the portal's own page.").json)
        }
        return nil
    }

    /// The page's live updates, as server-sent events: `change` (with the count of changes) when
    /// something the page shows changed in deskd, a comment line at least every 25 s otherwise
    /// (so proxies keep the stream), and `logout` when the login has ended, then the end. The
    /// waiting is deskd's (`watch`); this only carries its answers to the browser. A login and an
    /// account may hold a few streams, all of them together half the gateway's connections
    /// (`EventStreams`); each ends after its lifetime, and the page's EventSource comes back.
    private func events(_ request: HTTPRequestHead, cookie: String, portal: any PortalAuthority, signedOn: String?) {
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let channel = context.channel
        let questions = environment.questions, streams = environment.streams
        environment.ask(on: context.eventLoop) { await portal.watch(cookie: cookie, after: nil, signedOn: signedOn) }
            .assumeIsolated().whenSuccess { first in
            let handler = loopBound.value
            guard let first, first.loggedIn || first.account != nil else {
                return handler.answer(request, first == nil ? .serviceUnavailable : .unauthorized, first == nil ? Self.noAnswer : Self.loggedOut)
            }
            // Logged in, but deskd holds as many watches as it keeps: the page comes back later.
            guard let account = first.account else {
                var headers = HTTPHeaders()
                headers.add(name: "Retry-After", value: "30")
                return handler.answer(request, .serviceUnavailable, Self.noAnswer, headers: headers)
            }
            if let refusal = streams.open(cookie: cookie, account: account) {
                handler.environment.metrics.refused(.streamCapacity)
                var headers = HTTPHeaders()
                headers.add(name: "Retry-After", value: "30")
                return handler.answer(request, .tooManyRequests, GatewayRefusal(.limitReached, refusal.sentence).json, headers: headers)
            }
            handler.startStream(request)
            // The stream waits on deskd for as long as it runs.
            questions.asked()
            let ends = ContinuousClock.now + streams.limits.lifetime
            // Started from the channel's handler, synchronously; the channel's close cancels it
            // (below), and it ends by itself at the stream's lifetime.
            let stream = Task {
                defer {
                    streams.close(cookie: cookie, account: account)
                    questions.answered()
                }
                var seen = first.generation ?? 0
                while channel.isActive, !Task.isCancelled, ContinuousClock.now < ends {
                    let asked = ContinuousClock.now
                    guard let answer = await portal.watch(cookie: cookie, after: seen, signedOn: signedOn) else { break }
                    let (generation, loggedIn) = (answer.generation, answer.loggedIn)
                    guard loggedIn else {
                        channel.eventLoop.execute { loopBound.value.streamWrite("event: logout\ndata: {}\n\n") }
                        break
                    }
                    if let generation {
                        seen = generation
                        channel.eventLoop.execute { loopBound.value.streamWrite("event: change\ndata: \(generation)\n\n") }
                    } else {
                        channel.eventLoop.execute { loopBound.value.streamWrite(": nothing new\n\n") }
                        // deskd answered "nothing" at once: it holds as many watches as it keeps. Ask later.
                        if ContinuousClock.now - asked < .seconds(1) { try? await Task.sleep(for: .seconds(20)) }
                    }
                }
                channel.eventLoop.execute { loopBound.value.endStream() }
            }
            // A browser gone: the loop stops at its next turn (deskd's wait ends on its own).
            channel.closeFuture.whenComplete { _ in stream.cancel() }
        }
    }

    private func startStream(_ request: HTTPRequestHead) {
        guard let context else { return }
        holdOpen()
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream; charset=utf-8")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "Content-Security-Policy", value: PortalPage.contentSecurityPolicy)
        // nginx would otherwise hold the events back in its buffer.
        headers.add(name: "X-Accel-Buffering", value: "no")
        headers.add(name: "Connection", value: "close")
        context.write(Self.wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .ok, headers: headers))), promise: nil)
        // A browser that lost the stream comes back after 3 s.
        streamWrite("retry: 3000\n\n")
    }

    private func streamWrite(_ text: String) {
        guard let context, context.channel.isActive else { return }
        // A browser that reads nothing gets no more: the stream ends, and a browser that is still
        // there comes back (retry) and asks for the list.
        guard context.channel.isWritable else { return context.close(promise: nil) }
        context.writeAndFlush(Self.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil)
    }

    private func endStream() {
        guard let context else { return }
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// Answers once deskd has (or with 503 when it could not be asked).
    func later(_ request: HTTPRequestHead, _ work: @escaping @Sendable () async -> (HTTPResponseStatus, String, String?)?) {
        guard let context else { return }
        environment.ask(on: context.eventLoop) { await work() }.assumeIsolated().whenSuccess { [self] result in
            guard let (status, body, cookie) = result else { return answer(request, .serviceUnavailable, Self.noAnswer) }
            var headers = HTTPHeaders()
            if let cookie { headers.add(name: "Set-Cookie", value: cookie) }
            answer(request, status, body, headers: headers)
        }
    }

    func answer(_ request: HTTPRequestHead, _ status: HTTPResponseStatus, _ body: String, headers: HTTPHeaders = [:]) {
        respond(request, status, contentType: "application/json", body: body, private: true, extraHeaders: headers)
    }

    private func badRequest(_ request: HTTPRequestHead, _ sentence: String) {
        answer(request, .badRequest, GatewayRefusal(.badRequest, sentence).json)
    }

    // MARK: Shapes

    private struct LoginForm: Decodable { let user: String; let password: String }
    private struct AnswerForm: Decodable { let attempt: String; let answer: String }
    private struct IdentityAnswer: Encodable { let identity: WebIdentity }
    private struct QuestionAnswer: Encodable {
        struct Question: Encodable { let attempt: String; let text: String; let echo: Bool; let messages: [String] }
        let question: Question
    }

    static let loggedOut = GatewayRefusal(.permissionDenied, "You are not logged in to the portal, or your login has ended.").json
    static let noAnswer = GatewayRefusal(.internalError, "deskd did not answer; try again in a moment.").json
    static let clearCookie = "\(portalCookie)=; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"

    @Sendable static func loginAnswer(_ step: LoginStep) -> (HTTPResponseStatus, String, String?) {
        switch step {
        case .question(let attempt, let text, let echo, let messages):
            return (.ok, json(QuestionAnswer(question: .init(attempt: attempt, text: text, echo: echo, messages: messages))), nil)
        case .loggedIn(let cookie, let identity):
            // The cookie is deskd's random token; it rides in nothing but this header.
            let safe = RequestChecks.plausibleToken(cookie) && !cookie.contains(";") && !cookie.contains(",")
            guard safe else { return (.internalServerError, GatewayRefusal(.internalError, "The login could not be completed.").json, nil) }
            return (.ok, json(IdentityAnswer(identity: identity)), "\(portalCookie)=\(cookie); Secure; HttpOnly; SameSite=Strict; Path=/")
        case .refused(let message):
            return (.forbidden, GatewayRefusal(.loginRefused, message).json, nil)
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(text.utf8))
    }

    static func json<T: Encodable>(_ value: T) -> String {
        (try? JSONEncoder.desk.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
