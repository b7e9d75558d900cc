import DeskCore
import DeskGateway
import NIOCore

/// What the browser gateway reads from browsers, and what deskd reads from its web front.
extension FuzzTargets {
    /// One browser connection, as the gateway's pipeline reads it (HTTP requests, the portal's
    /// API and cookies, link tokens, the WebSocket upgrade and frames): the first byte plans
    /// where the rest is cut (`pieces`), and its top bit says whether the connection comes from
    /// the trusted proxy. Whatever is asked, noVNC's directory lets nothing else out.
    static let gatewayHTTP: Target = { bytes in
        guard let plan = bytes.first else { return }
        let peer = plan & 0x80 != 0 ? GatewayHarness.proxy : GatewayHarness.stranger
        let sent = GatewayHarness.shared.serve(pieces(bytes.dropFirst(), plan: plan & 0x7F), from: peer)
        precondition(!sent.contains(Array(GatewayHarness.secret.utf8)), "the gateway served a file from outside noVNC's directory")
    }

    /// A browser's RFB through the gateway (BrowserStream: the version, the security type, then
    /// the client-message filter): the first byte plans the cut, the second is the policy
    /// (bit 0 view-only, bit 1 clipboard from the browser, bit 2 ExtendedMouseButtons).
    /// However the input is cut, the gateway answers and passes the same; what it passes, passed
    /// again, is passed whole, so nothing the policy drops (keys, pointer, clipboard in view-only)
    /// is left in it.
    static let rfbClientMessages: Target = { bytes in
        guard bytes.count >= 2 else { return }
        let policy = ClientMessageFilter.Policy(viewOnly: bytes[1] & 1 != 0, clipboardFromBrowser: bytes[1] & 2 != 0,
                                                extendedMouseButtons: bytes[1] & 4 != 0)
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
