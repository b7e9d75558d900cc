import DeskCore
import DeskFrontProtocol
import FoundationEssentials
import Glibc
import NIOCore
import NIOHTTP1

/// The portal's file calls (docs/PROTOCOL.md, "Files"): a desktop owner's listing, download and
/// upload, each decided by deskd and opened by deskd-files as the owner. Here the bytes stream:
/// a download from the descriptor deskd passed, an upload into the one it passed, neither ever
/// whole in memory.
///
///     GET  /api/files/SESSION/list?path=P          a folder's entries (JSON)
///     GET  /api/files/SESSION/download?path=P      a file (ranges too), or a folder as .tar
///     POST /api/files/SESSION/uploads              {"folder","name","size","exists"} → {"upload": ID}
///     PUT  /api/files/SESSION/uploads/ID           the bytes → {"name","folder","size"}
extension GatewayHTTPHandler {
    /// A file call's route: the desktop, what is asked, and an upload's id.
    struct FileRoute {
        enum Verb: Equatable { case list, download, begin, upload(String) }
        let session: String
        let verb: Verb

        init?(_ path: Substring) {
            guard path.hasPrefix("/api/files/") else { return nil }
            let parts = path.dropFirst("/api/files/".count).split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count >= 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
                  parts[0].utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else { return nil }
            session = String(parts[0])
            switch (parts.count, parts[1]) {
            case (2, "list"): verb = .list
            case (2, "download"): verb = .download
            case (2, "uploads"): verb = .begin
            case (3, "uploads") where RequestChecks.plausibleToken(String(parts[2])): verb = .upload(String(parts[2]))
            default: return nil
            }
        }
    }

    struct UploadForm: Decodable {
        let folder: String
        let name: String
        let size: UInt64
        let exists: ExistingName?
    }

    private struct UploadStarted: Encodable { let upload: String }
    private struct Uploaded: Encodable { let name: String; let folder: String; let size: UInt64 }

    /// At a PUT's head: its upload's sink, when the upload is pending for this browser's login
    /// and page; nil otherwise (its route answers why, once the body has been read and dropped).
    func uploadSink(for request: HTTPRequestHead) -> UploadSink? {
        guard request.method == .PUT, environment.portal != nil, let context,
              let route = FileRoute(RequestChecks.path(of: request.uri)), case .upload(let id) = route.verb,
              refusalOfPortalRequest(request) == nil,
              let cookie = RequestChecks.cookie(Self.portalCookie, in: request.headers),
              let csrf = request.headers["X-Deskd-CSRF"].first,
              let upload = environment.uploads.take(id, cookie: cookie, csrf: csrf, session: route.session) else { return nil }
        // The body may take as long as it takes; the connection is cut after a minute without a byte.
        holdOpen()
        armIdle()
        return UploadSink(upload: upload, channel: context.channel)
    }

    /// The upload this request brought, given up: its file stays unnamed (deskd-files removes
    /// it with the transfer) and deskd hears so. Every way a request can end without reaching
    /// `finishUpload` comes here.
    func dropUpload() {
        guard let sink = upload else { return }
        upload = nil
        sink.abandon()
        if let files = environment.fileAuthority {
            let transfer = sink.upload.transfer, written = sink.written
            sink.whenClosed { Self.reportEnd(transfer, bytes: written, outcome: .cancelled, files: files) }
        }
    }

    /// Each file call, once its request is whole.
    func routeFiles(_ request: HTTPRequestHead, route: FileRoute, cookie: String?, signedOn: String?, body text: String, sink: UploadSink?) {
        guard let files = environment.fileAuthority, let cookie else {
            dropUpload()
            return answer(request, .unauthorized, Self.loggedOut)
        }
        let csrf = request.headers["X-Deskd-CSRF"].first
        switch (request.method, route.verb) {
        case (.GET, .list), (.HEAD, .list):
            guard let query = QueryString.parse(request.uri), let path = HomePath(query["path"] ?? "") else {
                return badPath(request)
            }
            later(request) {
                guard let reply = await files.files(cookie: cookie, csrf: csrf, session: route.session, call: .list(path), signedOn: signedOn) else { return nil }
                switch reply.answer {
                case .listing(let listing): return (.ok, Self.json(ListingAnswer(listing)), nil)
                case .refused(let why): return Self.refusedAnswer(why)
                default: return nil
                }
            }
        case (.GET, .download), (.HEAD, .download):
            guard let query = QueryString.parse(request.uri), let path = HomePath(query["path"] ?? "") else {
                return badPath(request)
            }
            download(request, path: path, session: route.session, cookie: cookie, signedOn: signedOn, files: files)
        case (.POST, .begin):
            guard let form = Self.decode(UploadForm.self, text), let folder = HomePath(form.folder) else {
                return badPath(request)
            }
            guard let name = FileName(form.name) else {
                return answer(request, .badRequest, GatewayRefusal(.badRequest, "A file's name may not be empty, \".\" or \"..\", hold \"/\", or be over 255 bytes; rename it and try again.").json)
            }
            beginUpload(request, folder: folder, name: name, size: form.size, exists: form.exists ?? .ask, session: route.session,
                        cookie: cookie, csrf: csrf ?? "", signedOn: signedOn, files: files)
        case (.PUT, .upload):
            guard let sink else {
                return answer(request, .notFound, GatewayRefusal(.badRequest, "No such upload here: it expired (an upload's bytes must follow within a minute), was used, or is another page's. Start it again.").json)
            }
            finishUpload(request, sink: sink, files: files)
        default:
            dropUpload()
            respond(request, .methodNotAllowed, contentType: "application/json",
                    body: GatewayRefusal(.badRequest, "The portal's file calls take GET for list and download, POST to begin an upload and PUT for its bytes.").json, private: true)
        }
    }

    private func badPath(_ request: HTTPRequestHead) {
        answer(request, .badRequest, GatewayRefusal(.badRequest, "A path here is relative to your home, with no \".\" or \"..\" and no leading \"/\", such as Downloads/report.pdf.").json)
    }

    @Sendable static func refusedAnswer(_ why: FileRefusal) -> (HTTPResponseStatus, String, String?) {
        (HTTPResponseStatus(statusCode: why.status), Self.json(FileRefusalAnswer(why)), nil)
    }

    /// A refusal in the control protocol's error shape; its code is the file call's own reason
    /// (docs/PROTOCOL.md lists them: exists, disk-full, quota, not-owner…).
    struct FileRefusalAnswer: Encodable {
        struct Body: Encodable { let code: String; let message: String }
        let error: Body

        init(_ refusal: FileRefusal) {
            error = Body(code: refusal.reason.rawValue, message: refusal.sentence)
        }
    }

    struct ListingAnswer: Encodable {
        let path: String
        let entries: [FileEntry]
        let truncated: Bool
        let uploadFolder: String?

        init(_ listing: FileListing) {
            path = listing.path.text
            entries = listing.entries
            truncated = listing.truncated
            uploadFolder = listing.uploadFolder?.text
        }
    }

    // MARK: Download

    private func download(_ request: HTTPRequestHead, path: HomePath, session: String, cookie: String, signedOn: String?, files: any FileAuthority) {
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        environment.ask(on: context.eventLoop) { await files.files(cookie: cookie, csrf: nil, session: session, call: .download(path), signedOn: signedOn) }
            .assumeIsolated().whenSuccess { reply in
            let handler = loopBound.value
            guard let reply else { return handler.answer(request, .serviceUnavailable, Self.noAnswer) }
            guard let transfer = reply.transfer, let fd = reply.descriptor else {
                if let fd = reply.descriptor { close(fd) }
                if case .refused(let why) = reply.answer {
                    let (status, body, _) = Self.refusedAnswer(why)
                    return handler.answer(request, status, body)
                }
                return handler.answer(request, .serviceUnavailable, Self.noAnswer)
            }
            switch reply.answer {
            case .file(let name, let size, let modified):
                handler.sendFile(request, fd: fd, name: name, size: size, modified: modified, transfer: transfer, files: files)
            case .archive(let name):
                handler.sendStream(request, fd: fd, status: .ok, headers: Self.downloadHeaders(name: name, type: "application/x-tar"),
                                   offset: 0, length: nil, transfer: transfer, files: files)
            default:
                close(fd)
                handler.reportEnd(transfer, bytes: 0, outcome: .failed("deskd answered a download with something else"), files: files)
                handler.answer(request, .serviceUnavailable, Self.noAnswer)
            }
        }
    }

    private func sendFile(_ request: HTTPRequestHead, fd: Int32, name: FileName, size: UInt64, modified: Int64, transfer: UInt64, files: any FileAuthority) {
        // The validator a resumed download's If-Range must match: the file's inode, size and
        // change time to the nanosecond (read from the descriptor, which follows no path), so a
        // file rewritten within the same second at the same size is not resumed into.
        var status = stat()
        let version = fstat(fd, &status) == 0
            ? "\(String(status.st_ino, radix: 16))-\(String(status.st_mtim.tv_sec, radix: 16)).\(String(status.st_mtim.tv_nsec, radix: 16))-"
            : "\(String(modified, radix: 16))-"
        let tag = "\"" + version + String(size, radix: 16) + "\""
        let lastModified = Self.httpDate(modified)
        // A resumed download asks for its range only if the file is still the one it began with.
        let ifRange = request.headers["If-Range"].first
        // A date is no strong validator (a file can change twice in its second): one given as
        // If-Range gets the whole file, as RFC 9110 §13.1.5 allows.
        let unchanged = ifRange == nil || ifRange == tag
        let range = unchanged ? ByteRange(header: request.headers["Range"].first, size: size) : .whole
        var headers = Self.downloadHeaders(name: name, type: "application/octet-stream")
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "ETag", value: tag)
        headers.add(name: "Last-Modified", value: lastModified)
        switch range {
        case .whole:
            headers.add(name: "Content-Length", value: String(size))
            sendStream(request, fd: fd, status: .ok, headers: headers, offset: 0, length: size, transfer: transfer, files: files)
        case .part(let first, let last):
            headers.add(name: "Content-Length", value: String(last - first + 1))
            headers.add(name: "Content-Range", value: "bytes \(first)-\(last)/\(size)")
            sendStream(request, fd: fd, status: .partialContent, headers: headers, offset: first, length: last - first + 1, transfer: transfer, files: files)
        case .unsatisfiable:
            close(fd)
            reportEnd(transfer, bytes: 0, outcome: .failed("the range asked for is past the file's end"), files: files)
            var extra = HTTPHeaders()
            extra.add(name: "Content-Range", value: "bytes */\(size)")
            respond(request, .rangeNotSatisfiable, contentType: "application/json", body: GatewayRefusal(.badRequest, "The range asked for starts past the file's end (\(size) bytes).").json, private: true, extraHeaders: extra)
        }
    }

    static func downloadHeaders(name: FileName, type: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: type)
        headers.add(name: "Content-Disposition", value: QueryString.attachmentName(name.text))
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "X-Frame-Options", value: "DENY")
        // Should a browser render it after all, it renders inert.
        headers.add(name: "Content-Security-Policy", value: "sandbox; default-src 'none'")
        return headers
    }

    /// The response's head, then the descriptor's bytes as the browser takes them. An archive
    /// (no length) ends the connection after it: its end is the body's end.
    private func sendStream(_ request: HTTPRequestHead, fd: Int32, status: HTTPResponseStatus, headers: HTTPHeaders,
                            offset: UInt64, length: UInt64?, transfer: UInt64, files: any FileAuthority) {
        guard let context else {
            close(fd)
            return reportEnd(transfer, bytes: 0, outcome: .cancelled, files: files)
        }
        var headers = headers
        let keepAlive = request.isKeepAlive && length != nil
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        holdOpen()
        // A browser that never takes the first chunk is cut like one that stops taking them.
        armIdle()
        context.write(Self.wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        guard request.method != .HEAD else {
            close(fd)
            reportEnd(transfer, bytes: 0, outcome: .cancelled, files: files)
            return endResponse(keepAlive: keepAlive)
        }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let stream = DownloadStream(fd: fd, offset: offset, length: length, context: context,
                                    wrap: { Self.wrapOutboundOut(.body(.byteBuffer($0))) }, progress: { loopBound.value.armIdle() }) { stream, whole in
            let handler = loopBound.value
            handler.download = nil
            let sent = stream.sent
            stream.whenClosed { Self.reportEnd(transfer, bytes: sent, outcome: whole ? .completed : .cancelled, files: files) }
            if whole { handler.endResponse(keepAlive: keepAlive) } else { handler.context?.close(promise: nil) }
        }
        download = stream
        stream.start()
    }

    private func endResponse(keepAlive: Bool) {
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { result in
            let handler = loopBound.value
            guard let context = handler.context else { return }
            if keepAlive, case .success = result { handler.awaitNextRequest() } else { context.close(promise: nil) }
        }
    }

    func reportEnd(_ transfer: UInt64, bytes: UInt64, outcome: TransferOutcome, files: any FileAuthority) {
        Self.reportEnd(transfer, bytes: bytes, outcome: outcome, files: files)
    }

    @Sendable static func reportEnd(_ transfer: UInt64, bytes: UInt64, outcome: TransferOutcome, files: any FileAuthority) {
        // Nobody waits for this answer: a download's end is only recorded.
        Task { _ = await files.transferEnded(transfer, bytes: bytes, outcome: outcome) }
    }

    // MARK: Upload

    private func beginUpload(_ request: HTTPRequestHead, folder: HomePath, name: FileName, size: UInt64, exists: ExistingName,
                             session: String, cookie: String, csrf: String, signedOn: String?, files: any FileAuthority) {
        let uploads = environment.uploads
        expireUploads(files: files)
        let eventLoop = context?.eventLoop
        later(request) {
            let call = FileCall.upload(folder: folder, name: name, size: size, exists: exists, createFolder: false)
            guard let reply = await files.files(cookie: cookie, csrf: csrf, session: session, call: call, signedOn: signedOn) else { return nil }
            guard case .uploadReady = reply.answer, let transfer = reply.transfer, let fd = reply.descriptor else {
                if let fd = reply.descriptor { close(fd) }
                if case .refused(let why) = reply.answer { return Self.refusedAnswer(why) }
                return nil
            }
            let id = uploads.add(PendingUploads.Upload(transfer: transfer, fd: fd, size: size, folder: folder, cookie: cookie, csrf: csrf,
                                                       session: session, expires: .now + PendingUploads.lifetime))
            // An id nobody brings bytes to is given back to deskd after its minute (counted
            // from its making, not from the request: deskd's answer may have taken a while).
            eventLoop?.scheduleTask(in: TimeAmount(PendingUploads.lifetime) + .seconds(1)) {
                Self.expire(uploads, files: files)
            }
            return (.created, Self.json(UploadStarted(upload: id)), nil)
        }
    }

    private func expireUploads(files: any FileAuthority) {
        Self.expire(environment.uploads, files: files)
    }

    private static func expire(_ uploads: PendingUploads, files: any FileAuthority) {
        for upload in uploads.expired() {
            close(upload.fd)
            Task { _ = await files.transferEnded(upload.transfer, bytes: 0, outcome: .cancelled) }
        }
    }

    private func finishUpload(_ request: HTTPRequestHead, sink: UploadSink, files: any FileAuthority) {
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        // The last writes, then deskd's fsync and naming, which grow with the file: deskd bounds
        // them (WebFiles.commitTimeout), not the usual minute for an answer.
        holdOpen()
        sink.end { sink in
            let handler = loopBound.value
            handler.upload = nil
            let upload = sink.upload
            if let failure = sink.failure {
                handler.reportEnd(upload.transfer, bytes: sink.written, outcome: .failed(failure.sentence), files: files)
                let (status, body, _) = Self.refusedAnswer(failure)
                return handler.answer(request, status, body)
            }
            let written = sink.written
            handler.later(request) {
                switch await files.transferEnded(upload.transfer, bytes: written, outcome: .completed) {
                case .committed(let name)?:
                    return (.created, Self.json(Uploaded(name: name.text, folder: upload.folder.text, size: upload.size)), nil)
                case .refused(let why)?: return Self.refusedAnswer(why)
                default: return nil
                }
            }
        }
    }
}

extension GatewayHTTPHandler {
    /// An HTTP date (RFC 9110 §5.6.7) for Last-Modified.
    static func httpDate(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
