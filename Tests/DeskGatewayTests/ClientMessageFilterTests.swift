@testable import DeskGateway
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
