import DeskFrontProtocol
import DeskCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// Everything on the gateway's port that is not a WebSocket: the link page, the token exchange
/// and noVNC's files.
///
/// One request at a time (NIO's pipelining handler holds the next back). A deadline runs from
/// the moment the handler waits for a request until that request is complete, so a client that
/// dribbles its headers, or idles on a kept-alive connection, is cut off; another bounds how
/// long a response may take to leave.
final class GatewayHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maxExchangeBody = 1024
    /// The portal's API: a control request, a login.
    static let maxAPIBody = 16 << 10

    let environment: GatewayEnvironment
    private let notes: UpgradeNotes
    let address: ConnectionAddress
    /// Behind a trusted proxy, the browser's address was over its cap at this request.
    private var overAddressCap = false
    var context: ChannelHandlerContext?
    private var head: HTTPRequestHead?
    var body: ByteBuffer?
    var bodyTooLarge = false
    private var deadline: Scheduled<Void>?
    /// An upload's body on its way to the file deskd-files made (`PUT /api/files/…/uploads/ID`).
    var upload: UploadSink?
    /// A download on its way to the browser.
    var download: DownloadStream?
    /// A connection that has been served something and then idles is closed without counting
    /// as refused; one that never completes a first request is a refusal.
    private var served = false

    init(environment: GatewayEnvironment, notes: UpgradeNotes, address: ConnectionAddress) {
        self.environment = environment
        self.notes = notes
        self.address = address
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        arm(environment.limits.handshakeTimeout, refusing: true)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        self.context = nil
    }

    /// Without a byte either way for this long, a transfer's connection is cut.
    static let transferIdle: Duration = .seconds(60)

    /// Arms the transfer's idle deadline again: a byte has just moved.
    func armIdle() {
        arm(Self.transferIdle, refusing: false)
    }

    /// A response is out on a kept-alive connection: the next request has the usual time to come.
    func awaitNextRequest() {
        served = true
        arm(environment.limits.handshakeTimeout, refusing: true)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A browser gone mid-transfer: an upload stays unnamed (deskd-files removes it), a
        // download's file closes; deskd hears of each.
        dropUpload()
        download?.abandon()
        download = nil
        context.fireChannelInactive()
    }

    /// A response that stays open (the portal's live updates): no deadline for it to leave.
    func holdOpen() {
        deadline?.cancel()
        deadline = nil
        served = true
    }

    private func arm(_ timeout: Duration, refusing: Bool) {
        deadline?.cancel()
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            let handler = loopBound.value
            guard let context = handler.context else { return }
            if refusing && !handler.served { handler.environment.metrics.refused(.timeout) }
            handler.environment.logger.debug("connection timed out", metadata: ["http.waiting": "\(refusing ? "request" : "response")"])
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch Self.unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body = nil
            bodyTooLarge = false
            overAddressCap = !address.admit(request.headers)
            dropUpload()
            upload = uploadSink(for: request)
        case .body(var chunk):
            if let upload {
                upload.append(chunk)
                armIdle()
                return
            }
            // Only the exchange takes a body, and a small one; the rest is read and dropped.
            guard let head, head.method == .POST, !bodyTooLarge else { return }
            let limit = RequestChecks.path(of: head.uri).hasPrefix("/api/") ? Self.maxAPIBody : Self.maxExchangeBody
            if (body?.readableBytes ?? 0) + chunk.readableBytes > limit {
                bodyTooLarge = true
                body = nil
            } else if body == nil {
                body = chunk
            } else {
                body!.writeBuffer(&chunk)
            }
        case .end:
            guard let request = head else { return }
            head = nil
            arm(environment.limits.responseTimeout, refusing: false)
            guard !overAddressCap else {
                dropUpload()
                environment.metrics.refused(.addressCapacity)
                environment.logger.debug("connection refused", metadata: ["reason": "address-capacity", "via": "trusted proxy"])
                var headers = HTTPHeaders()
                headers.add(name: "Retry-After", value: "5")
                return respond(request, .serviceUnavailable, body: "Too many connections from your address are open at the gateway; close some and try again.\n",
                               private: true, close: true, extraHeaders: headers)
            }
            route(request, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        switch error {
        // The upgrader turned a WebSocket request down; the request itself comes next, and is
        // answered by `route` with the reason the upgrader noted.
        case is NIOWebSocketUpgradeError:
            return
        // NIO's protocol error handler has answered 400 and closes the connection.
        case is HTTPParserError:
            environment.metrics.refused(.malformedRequest)
            environment.logger.debug("malformed request", metadata: ["error": "\(error)"])
        default:
            environment.logger.debug("connection failed", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    // MARK: Routes

    private func route(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = RequestChecks.path(of: request.uri)
        // The path only: a query could hold anything, and no token or cookie is ever logged.
        environment.logger.debug("request", metadata: ["http.method": "\(request.method)", "http.path": "\(path)"])
        if RequestChecks.forgesSingleSignOn(request.headers, configuration: environment.configuration, proxy: address.proxy) {
            dropUpload()
            environment.metrics.refused(.forgedUser)
            environment.logger.notice("request refused: a single sign-on header from a peer that is no trusted proxy",
                                      metadata: ["web.peer": "\(address.address ?? "?")"])
            return respond(request, .forbidden, contentType: "application/json",
                           body: GatewayRefusal(.permissionDenied, RequestChecks.forgedUserSentence(environment.configuration)).json, private: true)
        }
        if path == "/" || path.hasPrefix("/api/") || path.hasPrefix("/portal."), environment.portal != nil {
            return routePortal(request, path: path)
        }
        switch (request.method, path) {
        case (.GET, "/open"), (.HEAD, "/open"):
            respond(request, .ok, contentType: "text/html; charset=utf-8", body: OpenPage.html, private: true)
        case (.GET, "/open.js"), (.HEAD, "/open.js"):
            respond(request, .ok, contentType: "text/javascript; charset=utf-8", body: OpenPage.script, private: true)
        case (.GET, "/deskd-viewer.js"), (.HEAD, "/deskd-viewer.js"):
            respond(request, .ok, contentType: "text/javascript; charset=utf-8", body: OpenPage.viewerScript, private: true)
        case (.GET, "/deskd-drop.js"), (.HEAD, "/deskd-drop.js"):
            // The desktop page's file drops (Templates/portal/drop.js): the portal's, deskd's copy.
            guard let drop = dropScript else { return respond(request, .notFound, body: "Not found.\n") }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Security-Policy", value: PortalPage.contentSecurityPolicy)
            respond(request, .ok, contentType: "text/javascript; charset=utf-8", body: drop, private: true, extraHeaders: headers)
        case (.POST, "/exchange"):
            exchange(request)
        case (_, "/websockify"):
            refuseWebSocket(request)
        case (.GET, _), (.HEAD, _):
            serveFile(request)
        default:
            var headers = HTTPHeaders()
            headers.add(name: "Allow", value: "GET, HEAD")
            respond(request, .methodNotAllowed, body: "The gateway serves pages and one WebSocket; it takes no \(request.method) here.\n", extraHeaders: headers)
        }
    }

    private func exchange(_ request: HTTPRequestHead) {
        let token = body.map { String(buffer: $0) }.map { $0.trimming(where: \.isASCIISpace) } ?? ""
        // fetch() always sends Origin on a POST: another site's page may not trade a token here.
        guard RequestChecks.isSameOrigin(request.headers, tls: environment.isTLS, publicOrigin: environment.configuration.publicOrigin) else {
            environment.metrics.refused(.origin)
            respond(request, .forbidden, contentType: "application/json", body: GatewayRefusal.foreignOrigin.json, private: true, close: true)
            return
        }
        guard !bodyTooLarge, RequestChecks.plausibleToken(token) else {
            environment.metrics.refused(.token)
            respond(request, .forbidden, contentType: "application/json", body: GatewayRefusal.linkRefused.json, private: true)
            return
        }
        guard let context else { return }
        let authority = environment.authority
        // A browser logged in to the portal says so: a link for named accounts opens only for them.
        let portalCookie = environment.portal == nil ? nil : RequestChecks.cookie(Self.portalCookie, in: request.headers)
        // Behind a proxy that signs users on, its word names who the browser is now.
        let signedOn = portalCookie == nil ? nil
            : RequestChecks.singleSignOnUser(request.headers, configuration: environment.configuration, proxy: address.proxy)
        environment.ask(on: context.eventLoop) { await authority.exchange(token: token, portalCookie: portalCookie, signedOn: signedOn) }
            .assumeIsolated().whenSuccess { [self] exchanged in
            if exchanged == .forNamedViewers {
                environment.metrics.refused(.token)
                environment.logger.info("link refused", metadata: ["reason": "for named accounts, and this browser is logged in as none of them"])
                let sentence = "This link is for named people only: log in to the portal (this site's address, /) in this browser as one of them, then open the link again."
                respond(request, .forbidden, contentType: "application/json", body: GatewayRefusal(.linkRefused, sentence).json, private: true)
                return
            }
            guard case .granted(let cookie, let viewOnly) = exchanged else {
                environment.metrics.refused(.token)
                environment.logger.info("link refused", metadata: ["reason": "unknown, used or expired"])
                respond(request, .forbidden, contentType: "application/json", body: GatewayRefusal.linkRefused.json, private: true)
                return
            }
            let answer = (cookie: cookie, viewOnly: viewOnly)
            guard RequestChecks.plausibleToken(answer.cookie), !answer.cookie.contains(";"), !answer.cookie.contains(",") else {
                environment.metrics.refused(.token)
                environment.logger.info("link refused", metadata: ["reason": "unknown, used or expired"])
                respond(request, .forbidden, contentType: "application/json", body: GatewayRefusal.linkRefused.json, private: true)
                return
            }
            environment.metrics.exchanged()
            var headers = HTTPHeaders()
            headers.add(name: "Set-Cookie", value: "\(RequestChecks.cookieName)=\(answer.cookie); HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=60")
            respond(request, .ok, contentType: "application/json", body: "{\"viewOnly\":\(answer.viewOnly)}", private: true, extraHeaders: headers)
        }
    }

    private func refuseWebSocket(_ request: HTTPRequestHead) {
        switch notes.recorded {
        case .refused(let reason, let sentence):
            environment.metrics.refused(reason)
            environment.logger.info("websocket refused", metadata: ["reason": "\(reason.rawValue)"])
            respond(request, .forbidden, body: sentence + "\n", private: true, close: true)
        case .granted, nil:
            // Not a WebSocket handshake the upgrader could take (a plain GET, or a later request
            // on a kept-alive connection, which NIO's upgrader does not look at).
            environment.metrics.refused(.malformedRequest)
            respond(request, .badRequest, body: "The gateway's /websockify takes a WebSocket handshake on a connection of its own.\n", private: true, close: true)
        }
    }

    /// drop.js, where the portal is served and its folder has one: noVNC's page gets it too.
    private var dropScript: String? {
        environment.portal == nil ? nil : environment.portalPage?.drop
    }

    /// What a GET of one of noVNC's files gets, worked out off the event loop.
    private enum Served: Sendable {
        case file(StaticFiles.Answer?)
        /// The viewer's page, already naming the bundle where there is one.
        case viewer(StaticFiles.Answer?)
        /// The bundle of noVNC's modules the target names; its version and bytes (nil: the
        /// browser holds them).
        case bundle(version: String, body: [UInt8]?)
    }

    private func serveFile(_ request: HTTPRequestHead) {
        guard let context else { return }
        let files = environment.files, target = request.uri, allocator = context.channel.allocator
        let isViewer = StaticFiles.components(ofTarget: target) == StaticFiles.viewerPage
        let wantedBundle = ViewerBundle.version(inTarget: target)
        // The viewer's page is deskd's (its scripts added) and always fetched whole; the rest is
        // noVNC's as Debian installed it, kept by the browser and asked for again by its tag.
        let ifNoneMatch = isViewer ? nil : request.headers.first(name: "If-None-Match")
        let work: @Sendable () -> Served = {
            if let wanted = wantedBundle, let made = files.bundle?.current(), made.version == wanted {
                let held = StaticFiles.matches(ifNoneMatch: ifNoneMatch, tag: "\"\(wanted)\"")
                return .bundle(version: wanted, body: held ? nil : made.body)
            }
            let answer = files.read(target: target, ifNoneMatch: ifNoneMatch, allocator: allocator)
            guard isViewer else { return .file(answer) }
            guard case .file(let page, let contentType, let tag)? = answer, let bundle = files.bundle else { return .viewer(answer) }
            let text = String(buffer: page)
            guard ViewerBundle.names(text), let version = bundle.current()?.version else { return .viewer(answer) }
            return .viewer(.file(body: ByteBuffer(string: ViewerBundle.pointing(text, to: version)), contentType: contentType, tag: tag))
        }
        // Files are read off the event loop: a slow disk must not stall every relay on it.
        let read = environment.readsFilesInline
            ? context.eventLoop.makeSucceededFuture(work())
            : NIOThreadPool.singleton.runIfActive(eventLoop: context.eventLoop, work)
        read.assumeIsolated().whenComplete { [self] result in
            if let reason = files.bundle?.takeFailure() {
                environment.logger.warning("noVNC's modules are served one by one: \(reason)")
            }
            var headers = HTTPHeaders()
            switch try? result.get() {
            case .bundle(let version, let body)?:
                // Its address changes with its bytes: a browser keeps it for good.
                headers.add(name: "ETag", value: "\"\(version)\"")
                headers.add(name: "Cache-Control", value: "max-age=31536000, immutable")
                guard let body else { return respond(request, .notModified, contentType: "", body: ByteBuffer(), extraHeaders: headers) }
                respond(request, .ok, contentType: "text/javascript; charset=utf-8", body: context.channel.allocator.buffer(bytes: body), extraHeaders: headers)
            case .viewer(.file(let body, let contentType, _)?)?:
                var page = StaticFiles.inserting(StaticFiles.viewerScriptTag, beforeHeadEndOf: body)
                if dropScript != nil { page = StaticFiles.inserting(StaticFiles.dropScriptTag, beforeHeadEndOf: page) }
                headers.add(name: "Cache-Control", value: "no-cache")
                respond(request, .ok, contentType: contentType, body: page, extraHeaders: headers)
            case .file(.file(let body, let contentType, let tag)?)?:
                headers.add(name: "ETag", value: tag)
                headers.add(name: "Cache-Control", value: StaticFiles.cacheControl(forTarget: target))
                respond(request, .ok, contentType: contentType, body: body, extraHeaders: headers)
            case .file(.notModified(let tag)?)?, .viewer(.notModified(let tag)?)?:
                headers.add(name: "ETag", value: tag)
                headers.add(name: "Cache-Control", value: StaticFiles.cacheControl(forTarget: target))
                respond(request, .notModified, contentType: "", body: ByteBuffer(), extraHeaders: headers)
            case .file(nil)?, .viewer(nil)?, nil:
                respond(request, .notFound, body: "Not found.\n")
            }
        }
    }

    // MARK: Responses

    func respond(_ request: HTTPRequestHead, _ status: HTTPResponseStatus, contentType: String = "text/plain; charset=utf-8",
                 body: String, private isPrivate: Bool = false, close: Bool = false, extraHeaders: HTTPHeaders = [:]) {
        guard let context else { return }
        respond(request, status, contentType: contentType, body: context.channel.allocator.buffer(string: body),
                private: isPrivate, close: close, extraHeaders: extraHeaders)
    }

    func respond(_ request: HTTPRequestHead, _ status: HTTPResponseStatus, contentType: String, body: ByteBuffer,
                 private isPrivate: Bool = false, close: Bool = false, extraHeaders: HTTPHeaders = [:]) {
        guard let context else { return }
        var headers = extraHeaders
        headers.add(name: "X-Frame-Options", value: "DENY")
        // A 304 has no content, and its length would be the file's: it says neither.
        if status != .notModified {
            headers.add(name: "Content-Type", value: contentType)
            headers.add(name: "Content-Length", value: String(body.readableBytes))
        }
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        if isPrivate {
            headers.add(name: "Cache-Control", value: "no-store")
            if !headers.contains(name: "Content-Security-Policy") {
                headers.add(name: "Content-Security-Policy", value: OpenPage.contentSecurityPolicy)
            }
        } else {
            headers.add(name: "Content-Security-Policy", value: "frame-ancestors 'none'")
        }
        let keepAlive = request.isKeepAlive && !close
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(Self.wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if request.method != .HEAD && status != .notModified {
            context.write(Self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { result in
            let handler = loopBound.value
            guard let context = handler.context else { return }
            handler.served = true
            if keepAlive, case .success = result {
                handler.arm(handler.environment.limits.handshakeTimeout, refusing: true)
            } else {
                context.close(promise: nil)
            }
        }
    }
}

extension Character {
    /// Space, tab, CR or LF (CR LF is one `Character`): what may pad a body, and nothing
    /// beyond ASCII.
    fileprivate var isASCIISpace: Bool {
        self == " " || self == "\t" || self == "\r" || self == "\n" || self == "\r\n"
    }
}
