import DeskFrontProtocol
@testable import DeskWeb
import NIOCore
import Testing

/// RFB client messages as noVNC sends them.
enum Messages {
    static let setPixelFormat: [UInt8] = [0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]
    static let setEncodings: [UInt8] = [2, 0, 0, 2, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x21]
    static let updateRequest: [UInt8] = [3, 1, 0, 0, 0, 0, 0x02, 0x80, 0x01, 0xE0]
    static let keyEvent: [UInt8] = [4, 1, 0, 0, 0, 0, 0, 0x61]
    static let pointerEvent: [UInt8] = [5, 1, 0, 10, 0, 20]
    static let cutText: [UInt8] = [6, 0, 0, 0, 0, 0, 0, 5] + Array("hello".utf8)
    /// Extended clipboard: the length is sent negated.
    static let extendedCutText: [UInt8] = [6, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFC, 1, 0, 0, 0]
    static let continuousUpdates: [UInt8] = [150, 1, 0, 0, 0, 0, 0x02, 0x80, 0x01, 0xE0]
    static let fence: [UInt8] = [248, 0, 0, 0, 0, 0, 0, 3, 2, 0xAA, 0xBB]
    static let xvp: [UInt8] = [250, 0, 1, 2]
    static let setDesktopSize: [UInt8] = [251, 0, 0x04, 0, 0x03, 0, 1, 0] + [UInt8](repeating: 0, count: 16)
    static let qemuKey: [UInt8] = [255, 0, 0, 1, 0, 0, 0, 0x61, 0, 0, 0, 0x1E]

    /// SetEncodings listing `encodings`.
    static func setEncodings(_ encodings: [Int32]) -> [UInt8] {
        [2, 0, UInt8(encodings.count >> 8), UInt8(encodings.count & 0xFF)]
            + encodings.flatMap { value in (0..<4).reversed().map { UInt8(truncatingIfNeeded: UInt32(bitPattern: value) >> ($0 * 8)) } }
    }
    /// The ExtendedMouseButtons pseudo-encoding (noVNC 1.6, TigerVNC 1.15).
    static let extendedMouseButtons: Int32 = -316
    /// A PointerEvent with the mask's bit 7 set: button 8, or, where ExtendedMouseButtons is
    /// in force, the marker of an extra byte of buttons.
    static let highPointerEvent: [UInt8] = [5, 0x81, 0, 10, 0, 20]

    static let harmless = setPixelFormat + setEncodings + updateRequest + continuousUpdates + fence
    static let input = keyEvent + pointerEvent + cutText + extendedCutText + xvp + setDesktopSize + qemuKey
}

@Suite struct ClientMessageFilterTests {
    /// Feeds `bytes` in chunks of `chunk` bytes, as a network might split them.
    static func run(_ policy: ClientMessageFilter.Policy, _ bytes: [UInt8], chunk: Int = 1) throws -> (passed: [UInt8], dropped: Int) {
        var filter = ClientMessageFilter(policy: policy, maxClipboardBytes: 1024)
        var output = ByteBuffer()
        var offset = 0
        while offset < bytes.count {
            var input = ByteBuffer(bytes: bytes[offset..<min(offset + chunk, bytes.count)])
            try filter.filter(&input, into: &output)
            offset += chunk
        }
        return (Array(output.readableBytesView), filter.droppedMessages)
    }

    static let full = ClientMessageFilter.Policy(viewOnly: false, clipboardFromBrowser: true)
    static let viewOnly = ClientMessageFilter.Policy(viewOnly: true, clipboardFromBrowser: true)

    @Test(arguments: [1, 3, 7, 1000])
    func fullAccessPassesEveryMessageByteForByte(chunk: Int) throws {
        let stream: [UInt8] = [1] + Messages.harmless + Messages.input + Messages.harmless
        let (passed, dropped) = try Self.run(Self.full, stream, chunk: chunk)
        #expect(passed == stream)
        #expect(dropped == 0)
    }

    @Test(arguments: [1, 5, 1000])
    func viewOnlyDropsKeyboardPointerClipboardResizeAndPower(chunk: Int) throws {
        let stream: [UInt8] = [1] + Messages.setPixelFormat + Messages.input + Messages.setEncodings + Messages.keyEvent
            + Messages.updateRequest + Messages.continuousUpdates + Messages.fence
        let (passed, dropped) = try Self.run(Self.viewOnly, stream, chunk: chunk)
        #expect(passed == [1] + Messages.setPixelFormat + Messages.setEncodings + Messages.updateRequest + Messages.continuousUpdates + Messages.fence)
        #expect(dropped == 8)
    }

    /// A view-only viewer that asks for an exclusive session would make Xvnc drop the owner.
    @Test func viewOnlyAlwaysAsksForASharedSession() throws {
        #expect(try Self.run(Self.viewOnly, [0]).passed == [1])
        #expect(try Self.run(Self.full, [0]).passed == [0])
    }

    @Test func clipboardOffDropsOnlyCutText() throws {
        let policy = ClientMessageFilter.Policy(viewOnly: false, clipboardFromBrowser: false)
        let stream: [UInt8] = [1] + Messages.keyEvent + Messages.cutText + Messages.extendedCutText + Messages.pointerEvent
        let (passed, dropped) = try Self.run(policy, stream, chunk: 4)
        #expect(passed == [1] + Messages.keyEvent + Messages.pointerEvent)
        #expect(dropped == 2)
    }

    @Test(arguments: [
        ([1, 7, 0, 0], ClientMessageFilter.Violation.unknownMessage(7)),
        ([1, 1], .unknownMessage(1)),
        ([1, 255, 1, 0], .unknownMessage(255)),
        ([1, 6, 0, 0, 0, 0, 0, 4, 1], .oversizedClipboard(1025)),
        ([1, 6, 0, 0, 0, 0x80, 0, 0, 0], .oversizedClipboard(1 << 31)),
        ([1, 248, 0, 0, 0, 0, 0, 0, 0, 65], .oversizedFence(65)),
    ] as [([UInt8], ClientMessageFilter.Violation)])
    func aMessageThatCannotBeMeasuredEndsTheStream(stream: [UInt8], violation: ClientMessageFilter.Violation) {
        #expect(throws: violation) { try Self.run(Self.viewOnly, stream) }
    }

    /// A key event hidden in the length of a dropped clipboard is dropped with it, not parsed.
    @Test func aDroppedMessagesBodyIsNeverParsedAsMessages() throws {
        let smuggled = Messages.keyEvent + Messages.keyEvent
        let cut: [UInt8] = [6, 0, 0, 0, 0, 0, 0, UInt8(smuggled.count)] + smuggled
        let (passed, dropped) = try Self.run(Self.viewOnly, [1] + cut + Messages.updateRequest, chunk: 3)
        #expect(passed == [1] + Messages.updateRequest)
        #expect(dropped == 1)
    }
}

/// TigerVNC's server reading client messages (common/rfb/SMsgReader.cxx): the framing a stream
/// the filter passed gets at the other end. A PointerEvent is 7 bytes when the server knows
/// ExtendedMouseButtons (1.15 and later; Debian 12's 1.12 does not), the client's latest
/// SetEncodings listed -316 (ClientParams::supportsExtendedMouseButtons, whatever the server
/// has acknowledged) and the mask's bit 7 is set.
struct TigerVNCServer {
    let knowsExtendedMouseButtons: Bool

    /// The types of the messages `stream` (from ClientInit on) holds for this server, up to the
    /// first it would refuse (nil) or the end.
    func messageTypes(_ stream: [UInt8]) -> [UInt8?] {
        var types: [UInt8?] = []
        var at = 1
        var extended = false
        func u16(_ offset: Int) -> Int { Int(stream[at + offset]) << 8 | Int(stream[at + offset + 1]) }
        func u32(_ offset: Int) -> UInt32 { stream[(at + offset)..<(at + offset + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        while at < stream.count {
            let left = stream.count - at
            let length: Int
            switch stream[at] {
            case 0: length = 20
            case 2:
                guard left >= 4, left >= 4 + 4 * u16(2) else { return types }
                let encodings = (0..<u16(2)).map { Int32(bitPattern: u32(4 + 4 * $0)) }
                extended = knowsExtendedMouseButtons && encodings.contains(Messages.extendedMouseButtons)
                length = 4 + 4 * encodings.count
            case 3: length = 10
            case 4: length = 8
            case 5:
                guard left >= 2 else { return types }
                length = extended && stream[at + 1] & 0x80 != 0 ? 7 : 6
            case 6:
                guard left >= 8 else { return types }
                length = 8 + Int(Int32(bitPattern: u32(4)).magnitude)
            case 150: length = 10
            case 248:
                guard left >= 9 else { return types }
                length = 9 + Int(stream[at + 8])
            case 250: length = 4
            case 251:
                guard left >= 8 else { return types }
                length = 8 + 16 * Int(stream[at + 6])
            case 255: length = 12
            default: return types + [nil]
            }
            guard left >= length else { return types }
            types.append(stream[at])
            at += length
        }
        return types
    }
}

/// ExtendedMouseButtons: the filter and Xvnc must measure every PointerEvent alike, or what the
/// filter passes as one message Xvnc reads as another.
@Suite struct ExtendedMouseButtonsTests {
    static let offered = Messages.setEncodings([7, Messages.extendedMouseButtons, 0, -239])

    /// What the filter passes whole, however the network splits it.
    @Test(arguments: [1, 5, 1000])
    func xvncNeverHearsTheBrowserOfferExtendedMouseButtons(chunk: Int) throws {
        let stream: [UInt8] = [1] + Self.offered + Messages.highPointerEvent + Messages.updateRequest + Messages.keyEvent
        let (passed, dropped) = try ClientMessageFilterTests.run(ClientMessageFilterTests.full, stream, chunk: chunk)
        #expect(passed == [1] + Messages.setEncodings([7, 0, -239]) + Messages.highPointerEvent + Messages.updateRequest + Messages.keyEvent)
        #expect(dropped == 0)
    }

    /// With the clipboard off, a viewer offers -316 and sends a 6-byte PointerEvent with bit 7
    /// set, then a FramebufferUpdateRequest whose bytes, read one later, are a ClientCutText of
    /// one byte ("A"). A filter that passed -316 on but measured 6 bytes would let a server that
    /// reads -316 take the request's first byte as the pointer's extra byte and paste the rest.
    /// Each pairing the gateway can be in (a filter that reads -316 only in front of a server
    /// that does) passes no clipboard, and the server reads whole messages only.
    @Test(arguments: [(false, false), (false, true), (true, true)])
    func aPointerEventCannotHideClipboardFromTheFilter(filterReads: Bool, serverReads: Bool) throws {
        let disguised: [UInt8] = [3, 6, 0, 0, 0, 0, 0, 0, 1, 0x41]
        let stream: [UInt8] = [1] + Self.offered + Messages.highPointerEvent + disguised + Messages.updateRequest
        let policy = ClientMessageFilter.Policy(viewOnly: false, clipboardFromBrowser: false, extendedMouseButtons: filterReads)
        let (passed, _) = try ClientMessageFilterTests.run(policy, stream, chunk: 3)
        let types = TigerVNCServer(knowsExtendedMouseButtons: serverReads).messageTypes(passed)
        // Read as 7 bytes, the pointer took the request's 3; what follows is cut text, dropped.
        #expect(types == (filterReads ? [2, 5, 3] : [2, 5, 3, 3]), "\(passed)")
    }

    /// The same trick from a view-only viewer, with a KeyEvent ('a' down) one byte into the
    /// request, reaches nothing: the filter drops a view-only PointerEvent whole, so Xvnc never
    /// measures one, and every message it does get is one the filter measured. (This passed
    /// before the filter knew of -316 too: the misframing needs a PointerEvent that is passed.)
    @Test(arguments: [(false, false), (false, true), (true, true)])
    func aViewOnlyViewerGetsNoKeyPastTheFilterInAPointerEvent(filterReads: Bool, serverReads: Bool) throws {
        let disguised: [UInt8] = [3, 4, 1, 0, 0, 0, 0, 0, 0x61, 0]
        // Where -316 reaches Xvnc the pointer carries its extra byte, as the browser was told.
        let pointer = Messages.highPointerEvent + (filterReads ? [0] : [])
        let stream: [UInt8] = [1] + Self.offered + pointer + disguised + Messages.updateRequest
        let policy = ClientMessageFilter.Policy(viewOnly: true, clipboardFromBrowser: true, extendedMouseButtons: filterReads)
        let (passed, dropped) = try ClientMessageFilterTests.run(policy, stream, chunk: 2)
        #expect(TigerVNCServer(knowsExtendedMouseButtons: serverReads).messageTypes(passed) == [2, 3, 3], "\(passed)")
        #expect(dropped == 1)
    }

    /// In front of an Xvnc that reads -316, the offer passes, and the filter measures a
    /// PointerEvent by the SetEncodings it passed last, as TigerVNC does: 6 bytes before the
    /// offer, 7 with bit 7 set after it, 6 again once a later SetEncodings leaves -316 out.
    @Test(arguments: [1, 3, 1000])
    func withAnXvncThatReadsItPointerEventsAreMeasuredByTheLastList(chunk: Int) throws {
        let extended: [UInt8] = [5, 0x81, 0, 10, 0, 20, 0x01]
        let stream: [UInt8] = [1] + Messages.highPointerEvent + Self.offered + extended + Messages.pointerEvent + Messages.keyEvent
            + Messages.setEncodings([0]) + Messages.highPointerEvent + Messages.updateRequest
        let policy = ClientMessageFilter.Policy(viewOnly: false, clipboardFromBrowser: true, extendedMouseButtons: true)
        let (passed, dropped) = try ClientMessageFilterTests.run(policy, stream, chunk: chunk)
        #expect(passed == stream)
        #expect(dropped == 0)
        #expect(TigerVNCServer(knowsExtendedMouseButtons: true).messageTypes(passed) == [5, 2, 5, 5, 4, 2, 5, 3])
        // The same bytes for a filter that keeps -316 from Xvnc: the extra byte is no message.
        let policy12 = ClientMessageFilter.Policy(viewOnly: false, clipboardFromBrowser: true)
        #expect(throws: ClientMessageFilter.Violation.unknownMessage(1)) { try ClientMessageFilterTests.run(policy12, stream, chunk: chunk) }
    }

    @Test func aSetEncodingsIsHeldWholeAndBounded() throws {
        let many = Messages.setEncodings([Int32](repeating: 0, count: 1025))
        #expect(throws: ClientMessageFilter.Violation.tooManyEncodings(1025)) {
            try ClientMessageFilterTests.run(ClientMessageFilterTests.full, [1] + many)
        }
        // An empty list, the longest one, and one split mid-encoding pass as they came.
        let longest = Messages.setEncodings([Int32](repeating: 7, count: 1024))
        let stream: [UInt8] = [1] + Messages.setEncodings([]) + longest + Messages.setEncodings([0, 1]) + Messages.updateRequest
        #expect(try ClientMessageFilterTests.run(ClientMessageFilterTests.full, stream, chunk: 7).passed == stream)
    }
}

@Suite struct BrowserStreamTests {
    static let filter = ClientMessageFilter(policy: .init(viewOnly: true, clipboardFromBrowser: true))

    @Test func theBrowserGetsSecurityTypeNoneAndItsClientInitReachesTheDesktop() throws {
        var stream = BrowserStream(filter: Self.filter)
        var reply: [UInt8] = []
        var forward = ByteBuffer()
        var input = ByteBuffer(bytes: Array("RFB 003.008\n".utf8))
        try stream.consume(&input, reply: &reply, forward: &forward)
        #expect(reply == [1, 1])
        reply = []
        input = ByteBuffer(bytes: [1, 0] + Messages.keyEvent + Messages.updateRequest)
        try stream.consume(&input, reply: &reply, forward: &forward)
        #expect(reply == [0, 0, 0, 0])
        #expect(stream.isRelaying)
        #expect(Array(forward.readableBytesView) == [1] + Messages.updateRequest)
    }

    @Test func anotherVersionOrSecurityTypeIsRefused() throws {
        var stream = BrowserStream(filter: Self.filter)
        var reply: [UInt8] = []
        var forward = ByteBuffer()
        var input = ByteBuffer(bytes: Array("RFB 003.003\n".utf8))
        #expect(throws: BrowserStream.Violation.notRFB38) { try stream.consume(&input, reply: &reply, forward: &forward) }
        stream = BrowserStream(filter: Self.filter)
        input = ByteBuffer(bytes: Array("RFB 003.008\n".utf8) + [2])
        #expect(throws: BrowserStream.Violation.securityType(2)) { try stream.consume(&input, reply: &reply, forward: &forward) }
        #expect(forward.readableBytes == 0)
    }

    /// When the desktop refused the gateway, the browser is told why in RFB, which noVNC shows.
    @Test func aRefusalReachesTheBrowserAsAReason() throws {
        var stream = BrowserStream(filter: Self.filter, refusal: "gone")
        var reply: [UInt8] = []
        var forward = ByteBuffer()
        var input = ByteBuffer(bytes: Array("RFB 003.008\n".utf8))
        #expect(throws: BrowserStream.Violation.refused("gone")) { try stream.consume(&input, reply: &reply, forward: &forward) }
        #expect(reply == [0, 0, 0, 0, 4] + Array("gone".utf8))
    }
}
