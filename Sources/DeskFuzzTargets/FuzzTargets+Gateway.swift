import DeskCore
import DeskFrontProtocol
import DeskWeb
import NIOCore

/// What the browser gateway reads from browsers, and what deskd reads from its web front.
extension FuzzTargets {
    /// One browser connection, as the gateway's pipeline reads it (HTTP requests, the portal's
    /// API and cookies, link tokens, the WebSocket upgrade and frames): the first byte plans
    /// where the rest is cut (`pieces`), and its top bit says whether the connection comes from
    /// the trusted proxy. It is also cut after every request's head, as a browser waits for an
    /// answer (noVNC speaks RFB only once the gateway has greeted it). Whatever is asked, noVNC's
    /// directory lets nothing else out.
    static let gatewayHTTP: Target = { bytes in
        guard let plan = bytes.first else { return }
        let peer = plan & 0x80 != 0 ? GatewayHarness.proxy : GatewayHarness.stranger
        let sent = GatewayHarness.shared.serve(afterHeads(bytes.dropFirst()).flatMap { pieces($0, plan: plan & 0x7F) }, from: peer)
        precondition(!sent.contains(GatewayHarness.secret), "the gateway served a file from outside noVNC's directory")
    }

    /// `stream` cut after each blank line that ends a request's head.
    static func afterHeads(_ stream: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var segments: [ArraySlice<UInt8>] = [], start = stream.startIndex, at = stream.startIndex
        while at + 3 < stream.endIndex {
            if stream[at] == 0x0D, stream[at + 1] == 0x0A, stream[at + 2] == 0x0D, stream[at + 3] == 0x0A {
                segments.append(stream[start..<(at + 4)])
                start = at + 4
                at = start
            } else {
                at += 1
            }
        }
        if start < stream.endIndex { segments.append(stream[start...]) }
        return segments
    }

    /// A browser's RFB through the gateway (BrowserStream: the version, the security type, then
    /// the client-message filter): the first byte plans the cut, the second is the policy
    /// (bit 0 view-only, bit 1 clipboard from the browser, bit 2 ExtendedMouseButtons, bit 3 a
    /// measured desktop: wayvnc's, read as neatvnc reads it).
    /// However the input is cut, the gateway answers and passes the same; what it passes, passed
    /// again, is passed whole, so nothing the policy drops (keys, pointer, clipboard in view-only)
    /// is left in it.
    static let rfbClientMessages: Target = { bytes in
        guard bytes.count >= 2 else { return }
        let policy = ClientMessageFilter.Policy(viewOnly: bytes[1] & 1 != 0, clipboardFromBrowser: bytes[1] & 2 != 0,
                                                extendedMouseButtons: bytes[1] & 4 != 0, measuredDesktop: bytes[1] & 8 != 0)
        let stream = bytes.dropFirst(2)
        let whole = browserStream([stream], policy: policy)
        let cut = browserStream(pieces(stream, plan: bytes[0]), policy: policy)
        precondition(whole == cut, "the gateway's RFB depends on how the browser's bytes were cut: \(whole.violation.map(String.init(describing:)) ?? "passed") against \(cut.violation.map(String.init(describing:)) ?? "passed")")
        guard whole.passed.count > 0 else { return }
        var again = ClientMessageFilter(policy: policy, maxClipboardBytes: maxClipboardBytes)
        var input = ByteBuffer(bytes: whole.passed), output = ByteBuffer()
        do throws(ClientMessageFilter.Violation) {
            try again.filter(&input, into: &output)
        } catch {
            preconditionFailure("what the filter passed, it refuses: \(error)")
        }
        precondition(Array(output.readableBytesView) == whole.passed, "what the filter passed, it changes when passed again")
        precondition(again.droppedMessages == 0, "the filter passed a message its policy drops")
        // And as the server reads it, measured apart from the filter: nothing the policy drops.
        let types = policy.measuredDesktop ? NeatVNCReader.messageTypes(whole.passed) : XvncReader.messageTypes(whole.passed)
        let server = policy.measuredDesktop ? "wayvnc" : "Xvnc"
        for type in types {
            if policy.viewOnly {
                precondition(![4, 5, 6, 250, 251, 255].contains(type), "\(server) would read a view-only browser's message of type \(type)")
            } else if !policy.clipboardFromBrowser {
                precondition(type != 6, "\(server) would read the browser's clipboard, which the policy keeps out")
            }
        }
    }

    /// The client messages after ClientInit as TigerVNC's SMsgReader measures them (RFC 6143
    /// §7.5 and the extensions noVNC speaks; a PointerEvent is 7 bytes with the mask's bit 7 set
    /// once the latest SetEncodings listed ExtendedMouseButtons, -316), written apart from the
    /// gateway's filter so that a length the two disagree on shows.
    enum XvncReader {
        /// The types of the whole messages in `stream` (ClientInit first), in order; a type Xvnc
        /// does not know ends the walk, as it would end Xvnc's connection.
        static func messageTypes(_ stream: [UInt8]) -> [UInt8] {
            var extendedPointer = false
            return ServerReading.messageTypes(stream) { at in
                let read = ServerReading(stream: stream, at: at)
                switch stream[at] {
                case 0: return 20
                case 2:
                    guard let length = read.u16(2).map({ 4 + 4 * $0 }) else { return nil }
                    if at + length <= stream.count {
                        extendedPointer = stride(from: at + 4, to: at + length, by: 4).contains { offset in
                            Int32(bitPattern: stream[offset...(offset + 3)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) == -316
                        }
                    }
                    return length
                case 3: return 10
                case 4: return 8
                case 5: return extendedPointer && at + 1 < stream.count && stream[at + 1] & 0x80 != 0 ? 7 : 6
                case 6: return read.u32(4).map { 8 + Int(Int32(bitPattern: $0).magnitude) }
                case 150: return 10
                case 248: return read.u8(8).map { 9 + $0 }
                case 250: return 4
                case 251: return read.u8(6).map { 8 + 16 * $0 }
                case 255: return 12
                default: return nil
                }
            }
        }
    }

    /// The client messages after ClientInit as wayvnc's neatvnc reads them: 0.5.4 (Debian 12)
    /// reads at most 32 encodings of a SetEncodings and only their bytes (fixed in 0.8), a
    /// PointerEvent is 6 bytes, a ClientCutText's length is unsigned (a negative one closes the
    /// client); later releases add EnableContinuousUpdates, SetDesktopSize and Fence. A type it
    /// does not know ends the walk, as it closes the client.
    enum NeatVNCReader {
        static func messageTypes(_ stream: [UInt8]) -> [UInt8] {
            ServerReading.messageTypes(stream) { at in
                let read = ServerReading(stream: stream, at: at)
                switch stream[at] {
                case 0: return 20
                case 2: return read.u16(2).map { 4 + 4 * min(32, $0) }
                case 3: return 10
                case 4: return 8
                case 5: return 6
                case 6:
                    // MAX_CUT_TEXT_SIZE and beyond (a negative length among them): closed.
                    guard let text = read.u32(4), text < 1 << 24 else { return nil }
                    return 8 + Int(text)
                case 150: return 10
                case 248: return read.u8(8).map { 9 + $0 }
                case 251: return read.u8(6).map { 8 + 16 * $0 }
                case 255:
                    // QEMU's extended key event only: another subtype closes the client.
                    guard read.u8(1) == 0 else { return nil }
                    return 12
                default: return nil
                }
            }
        }
    }

    /// A server's walk over client messages, apart from the gateway's filter: the fields of the
    /// message at `at`, nil where they are still on their way.
    struct ServerReading {
        let stream: [UInt8]
        let at: Int

        func u8(_ offset: Int) -> Int? { at + offset < stream.count ? Int(stream[at + offset]) : nil }
        func u16(_ offset: Int) -> Int? { at + offset + 1 < stream.count ? Int(stream[at + offset]) << 8 | Int(stream[at + offset + 1]) : nil }
        func u32(_ offset: Int) -> UInt32? {
            guard at + offset + 3 < stream.count else { return nil }
            return stream[(at + offset)...(at + offset + 3)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }

        /// The types of the whole messages in `stream` after its ClientInit, in order, each
        /// measured by `length` (its whole length, or nil where the server stops: a type it does
        /// not know, or a length still on its way); a message cut short ends the walk too.
        static func messageTypes(_ stream: [UInt8], length: (_ at: Int) -> Int?) -> [UInt8] {
            var types: [UInt8] = [], at = 1
            while at < stream.count {
                guard let length = length(at), at + length <= stream.count else { return types }   // the rest is still on its way
                types.append(stream[at])
                at += length
            }
            return types
        }
    }

    static let maxClipboardBytes = 4096

    /// What BrowserStream answered and passed for `pieces`, and the violation that ended it.
    struct BrowserStreamOutcome: Equatable {
        var replied: [UInt8] = []
        var passed: [UInt8] = []
        var violation: BrowserStream.Violation?
    }

    static func browserStream(_ pieces: [ArraySlice<UInt8>], policy: ClientMessageFilter.Policy) -> BrowserStreamOutcome {
        var stream = BrowserStream(filter: ClientMessageFilter(policy: policy, maxClipboardBytes: maxClipboardBytes))
        var outcome = BrowserStreamOutcome()
        for piece in pieces {
            var input = ByteBuffer(bytes: piece), forward = ByteBuffer()
            do throws(BrowserStream.Violation) {
                try stream.consume(&input, reply: &outcome.replied, forward: &forward)
                outcome.passed += forward.readableBytesView
            } catch {
                outcome.passed += forward.readableBytesView
                outcome.violation = error
                break
            }
        }
        return outcome
    }

    /// A Wayland desktop's RFB as the gateway reads it for a browser (ServerMessageFilter: the
    /// owner's wayvnc, or whatever the owner runs in its place, may send anything): the first
    /// byte plans the cut, the second is the policy (bit 0 the clipboard may reach the browser,
    /// bit 1 the browser set no pixel format; the browser listed what noVNC lists). However the stream is cut, the gateway passes
    /// the same and stops at the same place; what it passes, read again, is passed whole with no
    /// ServerCutText left in it where the policy keeps the clipboard.
    static let rfbServerMessages: Target = { bytes in
        guard bytes.count >= 2 else { return }
        let policy = ServerMessageFilter.Policy(clipboardToBrowser: bytes[1] & 1 != 0)
        let requested = bytes[1] & 2 == 0 ? PixelFormat([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]) : nil
        let stream = bytes.dropFirst(2)
        let whole = desktopStream([stream], policy: policy, requested: requested)
        let cut = desktopStream(pieces(stream, plan: bytes[0]), policy: policy, requested: requested)
        precondition(whole.passed == cut.passed && whole.violation == cut.violation,
                     "the gateway's reading of the desktop depends on how its bytes were cut: \(whole.violation.map(String.init(describing:)) ?? "passed") against \(cut.violation.map(String.init(describing:)) ?? "passed")")
        let again = desktopStream([whole.passed[...]], policy: policy, requested: requested)
        precondition(again.violation == nil && again.passed == whole.passed, "what the filter passed, it refuses or changes when read again")
        if !policy.clipboardToBrowser { precondition(again.dropped == 0, "the filter passed the desktop's clipboard where the policy keeps it") }
    }

    static func desktopStream(_ pieces: [ArraySlice<UInt8>], policy: ServerMessageFilter.Policy,
                              requested: PixelFormat?) -> (passed: [UInt8], violation: ServerMessageFilter.Violation?, dropped: Int) {
        var filter = ServerMessageFilter(policy: policy)
        filter.requestedFormat = requested
        filter.offeredEncodings = [0, 1, 7, 16, -239, -223, -224, -258, -261, -307, -308, -312, -313]
        var passed: [UInt8] = []
        for piece in pieces {
            var input = ByteBuffer(bytes: piece), output = ByteBuffer()
            do throws(ServerMessageFilter.Violation) {
                try filter.filter(&input, into: &output)
                passed += output.readableBytesView
            } catch {
                passed += output.readableBytesView
                return (passed, error, filter.droppedMessages)
            }
        }
        return (passed, nil, filter.droppedMessages)
    }

    /// What deskd reads from its web front (deskd-web runs as its own user: a front taken over
    /// may send anything): a request, written again, reads back the same.
    static let frontRequest: Target = { bytes in
        guard bytes.count <= FrontWire.requestLimit, let request = FrontWire.decode(FrontRequest.self, from: bytes) else { return }
        if case .counts(let snapshot) = request, snapshot.isPlausible {
            // What deskd keeps of a front that has gone.
            precondition(snapshot.closed.isPlausible, "a plausible front's counts, closed, are not")
        }
        precondition(FrontWire.decode(FrontRequest.self, from: FrontWire.encode(request)) == request, "a front request does not read back: \(request)")
    }
}
