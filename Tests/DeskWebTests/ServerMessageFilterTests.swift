@testable import DeskWeb
import NIOCore
import Testing

/// RFB server messages as wayvnc (neatvnc) and the RFB specifications write them.
enum ServerMessages {
    static func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    static func u32(_ value: Int32) -> [UInt8] { (0..<4).reversed().map { UInt8(truncatingIfNeeded: UInt32(bitPattern: value) >> ($0 * 8)) } }

    /// 32 bits per pixel, depth 24, 8 bits per colour: what noVNC asks for.
    static let format888: [UInt8] = [32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]
    static let format565: [UInt8] = [16, 16, 0, 1, 0, 31, 0, 63, 0, 31, 11, 5, 0, 0, 0, 0]
    /// 32 bits per pixel of depth 32: Tight's pixels are 3 bytes to neatvnc and 4 to TigerVNC.
    static let formatAmbiguous: [UInt8] = [32, 32, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]

    static func serverInit(width: Int = 1280, height: Int = 800, format: [UInt8] = format888, name: String = "WayVNC") -> [UInt8] {
        u16(width) + u16(height) + format + u32(Int32(name.utf8.count)) + Array(name.utf8)
    }

    static func update(_ rectangles: [UInt8]..., count: Int? = nil) -> [UInt8] {
        [0, 0] + u16(count ?? rectangles.count) + rectangles.flatMap { $0 }
    }

    static func rectangle(_ encoding: Int32, width: Int, height: Int, x: Int = 0, y: Int = 0) -> [UInt8] {
        u16(x) + u16(y) + u16(width) + u16(height) + u32(encoding)
    }

    static func cutText(_ text: String) -> [UInt8] { [3, 0, 0, 0] + u32(Int32(text.utf8.count)) + Array(text.utf8) }

    /// Tight's compact length.
    static func compact(_ length: Int) -> [UInt8] {
        if length < 0x80 { return [UInt8(length)] }
        if length < 0x4000 { return [UInt8(length & 0x7F | 0x80), UInt8(length >> 7)] }
        return [UInt8(length & 0x7F | 0x80), UInt8(length >> 7 & 0x7F | 0x80), UInt8(length >> 14)]
    }

    static func filler(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) } }

    /// One of each rectangle the gateway measures, each with a body of the length it claims.
    static let everyRectangle: [UInt8] = update(
        rectangle(0, width: 3, height: 2) + filler(3 * 2 * 4),                              // raw
        rectangle(1, width: 10, height: 10) + [0, 1, 0, 2],                                  // CopyRect
        rectangle(16, width: 64, height: 64) + u32(5) + filler(5),                           // ZRLE
        rectangle(7, width: 64, height: 64) + [0x80] + [1, 2, 3],                            // Tight fill
        rectangle(7, width: 64, height: 64) + [0x90] + compact(300) + filler(300),           // Tight JPEG
        rectangle(7, width: 64, height: 64) + [0x10] + compact(20_000) + filler(20_000),     // Tight basic, stream 1, copy
        rectangle(7, width: 4, height: 1) + [0x00] + compact(12) + filler(12),               // Tight basic, 12 bytes exactly
        rectangle(7, width: 32, height: 4) + [0x60, 1, 1] + filler(6) + compact(16) + filler(16), // Tight palette of 2: 1 bit a pixel
        rectangle(7, width: 16, height: 4) + [0x40, 1, 3] + filler(12) + compact(40) + filler(40), // palette of 4
        rectangle(7, width: 32, height: 32) + [0x40, 2] + compact(9) + filler(9),            // gradient
        rectangle(-239, width: 9, height: 2) + filler(9 * 2 * 4 + 2 * 2),                    // cursor and its mask
        rectangle(-308, width: 1024, height: 768) + [2, 0, 0, 0] + filler(32),               // ExtendedDesktopSize, 2 screens
        rectangle(-307, width: 0, height: 0) + u32(4) + Array("sway".utf8),                  // DesktopName
        rectangle(-223, width: 800, height: 600),                                            // DesktopSize
        rectangle(-258, width: 0, height: 0),                                                // QEMU extended key event
        rectangle(-261, width: 0, height: 0) + [4]                                           // QEMU LED state
    )
    /// What noVNC lists, as the gateway passes it to a measured desktop.
    static let offered: Set<Int32> = [0, 1, 7, 16, -239, -223, -224, -258, -261, -307, -308, -312, -313]

    static let bell: [UInt8] = [2]
    static let endOfContinuousUpdates: [UInt8] = [150]
    static let fence: [UInt8] = [248, 0, 0, 0, 0, 0, 0, 2, 3, 9, 9, 9]
    static let colourMap: [UInt8] = [1, 0, 0, 0, 0, 2] + filler(12)
}

@Suite struct ServerMessageFilterTests {
    /// Feeds `bytes` in chunks of `chunk` bytes, as a network might split them.
    static func run(_ bytes: [UInt8], clipboard: Bool, requested: [UInt8]? = ServerMessages.format888, offered: Set<Int32> = ServerMessages.offered,
                    chunk: Int = 1) throws(ServerMessageFilter.Violation) -> (passed: [UInt8], dropped: Int) {
        var filter = ServerMessageFilter(policy: .init(clipboardToBrowser: clipboard))
        filter.requestedFormat = requested.flatMap { PixelFormat($0) }
        filter.offeredEncodings = offered
        var output = ByteBuffer()
        var offset = 0
        while offset < bytes.count {
            var input = ByteBuffer(bytes: bytes[offset..<min(offset + chunk, bytes.count)])
            try filter.filter(&input, into: &output)
            offset += chunk
        }
        return (Array(output.readableBytesView), filter.droppedMessages)
    }

    @Test(arguments: [1, 2, 5, 13, 4096])
    func everyMeasuredMessagePassesWholeAndTheClipboardOnlyWhereItMay(chunk: Int) throws {
        let rest = ServerMessages.everyRectangle + ServerMessages.bell + ServerMessages.fence + ServerMessages.endOfContinuousUpdates
            + ServerMessages.colourMap + ServerMessages.update()
        let stream = ServerMessages.serverInit() + rest + ServerMessages.cutText("owner's secret") + rest
        let full = try Self.run(stream, clipboard: true, chunk: chunk)
        #expect(full.passed == stream && full.dropped == 0)
        let watched = try Self.run(stream, clipboard: false, chunk: chunk)
        #expect(watched.passed == ServerMessages.serverInit() + rest + rest, "the clipboard, or something else, was dropped or kept")
        #expect(watched.dropped == 1)
    }

    /// A read that passes whole is passed as it came (no copy); one that drops, holds or
    /// completes a header from before is rewritten, with the same bytes the stream API passes.
    @Test func aReadPassedWholeIsTheReadItself() throws {
        var filter = ServerMessageFilter(policy: .init(clipboardToBrowser: false))
        filter.requestedFormat = PixelFormat(ServerMessages.format888)
        let start = ServerMessages.serverInit() + ServerMessages.update(ServerMessages.rectangle(0, width: 2, height: 2) + ServerMessages.filler(16))
        #expect(try filter.read(ByteBuffer(bytes: start)) == .whole)
        #expect(try filter.read(ByteBuffer(bytes: [0, 0])) == .rewritten(ByteBuffer()), "half an update's header is held")
        #expect(try filter.read(ByteBuffer(bytes: [0, 0] + ServerMessages.cutText("x") + [2])) == .rewritten(ByteBuffer(bytes: [0, 0, 0, 0, 2])))
        #expect(try filter.read(ByteBuffer(bytes: ServerMessages.bell)) == .whole)
    }

    /// A clipboard that looks like a framebuffer update, and one that comes right after the
    /// last rectangle of one: found and dropped either way.
    @Test func theClipboardIsFoundWhereverItFalls() throws {
        let lookalike = ServerMessages.cutText(String(decoding: ServerMessages.update(ServerMessages.rectangle(0, width: 1, height: 1) + [3, 0, 0, 0]), as: UTF8.self))
        let tight = ServerMessages.update(ServerMessages.rectangle(7, width: 1, height: 1) + [0x80] + [1, 2, 3])
        let stream = ServerMessages.serverInit() + lookalike + tight + ServerMessages.cutText("x") + ServerMessages.bell
        let watched = try Self.run(stream, clipboard: false)
        #expect(watched.passed == ServerMessages.serverInit() + tight + ServerMessages.bell)
        #expect(watched.dropped == 2)
    }

    /// LastRect ends an update whose count said 0xFFFF (rectangles until LastRect).
    @Test func lastRectEndsTheUpdate() throws {
        let update = ServerMessages.update(ServerMessages.rectangle(0, width: 1, height: 1) + [1, 2, 3, 4],
                                           ServerMessages.rectangle(-224, width: 0, height: 0), count: 0xFFFF)
        let watched = try Self.run(ServerMessages.serverInit() + update + ServerMessages.cutText("x"), clipboard: false)
        #expect(watched.passed == ServerMessages.serverInit() + update && watched.dropped == 1)
    }

    /// The browser's pixel format measures what follows, whatever ServerInit said: 4 bytes a
    /// pixel after noVNC's SetPixelFormat, where the server's own 16-bit format is not measured.
    @Test func pixelsAreMeasuredInTheFormatTheBrowserAskedFor() throws {
        let start = ServerMessages.serverInit(format: ServerMessages.format565)
        let raw = ServerMessages.update(ServerMessages.rectangle(0, width: 4, height: 1) + ServerMessages.filler(16))
        let stream = start + raw + ServerMessages.cutText("x")
        let watched = try Self.run(stream, clipboard: false, requested: ServerMessages.format888)
        #expect(watched.passed == start + raw && watched.dropped == 1)
        #expect(throws: ServerMessageFilter.Violation.unmeasurablePixelFormat) { try Self.run(stream, clipboard: false, requested: ServerMessages.format565) }
        // Without the browser's format, nothing is measured by ServerInit's instead: neatvnc 0.5
        // would use its framebuffer's.
        #expect(throws: ServerMessageFilter.Violation.unmeasurablePixelFormat) { try Self.run(ServerMessages.serverInit() + raw, clipboard: false, requested: nil) }
    }

    @Test func whatCannotBeMeasuredEndsTheStream() throws {
        let start = ServerMessages.serverInit()
        func violation(_ bytes: [UInt8], requested: [UInt8]? = ServerMessages.format888, offered: Set<Int32> = ServerMessages.offered) -> ServerMessageFilter.Violation? {
            do { _ = try Self.run(start + bytes, clipboard: false, requested: requested, offered: offered); return nil } catch { return error }
        }
        #expect(violation([4]) == .unknownMessage(4))
        #expect(violation([250, 0, 1, 0]) == .unknownMessage(250))   // xvp: never negotiated
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(5, width: 16, height: 16)), offered: [5]) == .unknownEncoding(5))   // Hextile
        // A rectangle in an encoding the browser never listed (raw aside): neatvnc labels its
        // VMware LED state -261 with a 4-byte body, and a filter that lost its place reads any
        // label; either way the relay stops.
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(16, width: 64, height: 64) + ServerMessages.u32(3) + [1, 2, 3]), offered: [0, 7]) == .unrequestedEncoding(16))
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(-307, width: 0, height: 0) + ServerMessages.u32(0x7FFF_FFFF))) == .oversizedDesktopName(0x7FFF_FFFF))
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(0x574D_5668, width: 0, height: 0) + [0, 0, 0, 1]), offered: [0x574D_5668]) == .unknownEncoding(0x574D_5668))
        #expect(try Self.run(start + ServerMessages.update(ServerMessages.rectangle(0, width: 1, height: 1) + [1, 2, 3, 4]), clipboard: false, offered: []).passed.count > 24, "raw needs no listing")
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(-260, width: 16, height: 16)), offered: [-260]) == .unknownEncoding(-260))   // TightPNG
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(7, width: 16, height: 16) + [0xA0])) == .tightControl(0xA0))
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(7, width: 16, height: 16) + [0x40, 3])) == .tightControl(0x40))
        // A palette of one colour, and pixels under 12 bytes (neatvnc's small last tile): read
        // two ways by two readers, so neither is guessed.
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(7, width: 16, height: 16) + [0x40, 1, 0] + [1, 2, 3])) == .tightControl(0x40))
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(7, width: 1, height: 3) + [0x00] + [9, 1, 2, 3, 4, 5, 6, 7, 8, 9])) == .ambiguousTight(9))
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(7, width: 1, height: 1)), requested: ServerMessages.format565) == .unmeasurablePixelFormat)
        #expect(violation([248, 0, 0, 0, 0, 0, 0, 0, 65]) == .oversizedFence(65))
        #expect(violation(ServerMessages.update(ServerMessages.rectangle(0, width: 1, height: 1)), requested: ServerMessages.formatAmbiguous) == .unmeasurablePixelFormat)
        #expect(throws: ServerMessageFilter.Violation.unmeasurablePixelFormat) {
            try Self.run(ServerMessages.serverInit(format: ServerMessages.formatAmbiguous) + ServerMessages.update(ServerMessages.rectangle(0, width: 1, height: 1)), clipboard: false, requested: nil)
        }
    }

    @Test func compactLengthsOfOneTwoAndThreeBytes() {
        for length in [0, 1, 127, 128, 300, 16383, 16384, 4_194_303] {
            let bytes = ServerMessages.compact(length)
            #expect(ServerMessageFilter.compactLength(bytes[...], at: 0) == length, "\(length) as \(bytes)")
            #expect(ServerMessageFilter.compactLength(bytes.dropLast(), at: 0) == nil || bytes.count == 1)
        }
    }

    @Test func theEncodingsABrowserMayAskForAreTheMeasuredOnes() {
        for measured: Int32 in [0, 1, 7, 16, -239, -223, -224, -258, -261, -307, -308, -312, -313, -32, -23, -256, -247] {
            #expect(ServerMessageFilter.isMeasurable(measured), "\(measured)")
        }
        for unmeasured: Int32 in [2, 5, 15, 21, 50, -260, -309, -316, -1000, -1001, Int32(bitPattern: 0xC0A1_E5CE), 0x574D_5664, 0x574D_5668] {
            #expect(!ServerMessageFilter.isMeasurable(unmeasured), "\(unmeasured)")
        }
    }
}

/// The browser's side of a measured desktop (ClientMessageFilter with `measuredDesktop`).
@Suite struct MeasuredDesktopClientTests {
    static let policy = ClientMessageFilter.Policy(viewOnly: true, clipboardFromBrowser: false, measuredDesktop: true)

    @Test func onlyMeasuredEncodingsReachTheDesktop() throws {
        let asked = Messages.setEncodings([7, 5, 16, -260, 0, 21, 50, -239, -308, Int32(bitPattern: 0xC0A1_E5CE), -316, -309, -224, -32])
        let (passed, _) = try ClientMessageFilterTests.run(Self.policy, [1] + asked)
        #expect(passed == [1] + Messages.setEncodings([7, 16, 0, -239, -308, -224, -32]))
    }

    /// wayvnc reads 32 encodings at most, and only their bytes: a longer list, or one padded
    /// with repeats, would have the rest read as messages (a fence's payload as keys).
    @Test func noMoreEncodingsThanWayvncReadsAndEachOnce() throws {
        let padded = Messages.setEncodings([Int32](repeating: 7, count: 20) + (0..<40).map { _ in Int32(0) } + [16, -239])
        let (passed, _) = try ClientMessageFilterTests.run(Self.policy, [1] + padded + Messages.fence)
        #expect(passed == [1] + Messages.setEncodings([7, 0, 16, -239]) + Messages.fence)
        let every: [Int32] = [0, 1, 7, 16, -239, -223, -224, -258, -261, -307, -308, -312, -313] + Array(-32 ... -23) + Array(-256 ... -247)
        let (all, _) = try ClientMessageFilterTests.run(Self.policy, [1] + Messages.setEncodings(every))
        #expect(all == [1] + Messages.setEncodings(Array(every.prefix(ServerMessageFilter.maxEncodings))))
    }

    /// The extended clipboard is never offered to a measured desktop's browser.
    @Test func aNegativeClipboardLengthEndsTheStream() {
        let full = ClientMessageFilter.Policy(viewOnly: false, clipboardFromBrowser: true, measuredDesktop: true)
        #expect(throws: ClientMessageFilter.Violation.extendedClipboard) { try ClientMessageFilterTests.run(full, [1] + Messages.extendedCutText) }
        #expect(throws: ClientMessageFilter.Violation.unmeasurablePixelFormat) {
            try ClientMessageFilterTests.run(full, [1, 0, 0, 0, 0] + ServerMessages.format565)
        }
    }

    @Test func thePixelFormatIsSetBeforeTheScreenIsAskedForOrNotAtAll() throws {
        var filter = ClientMessageFilter(policy: Self.policy)
        var input = ByteBuffer(bytes: [1] + Messages.setPixelFormat), output = ByteBuffer()
        try filter.filter(&input, into: &output)
        #expect(filter.pixelFormat == PixelFormat(ServerMessages.format888))
        var more = ByteBuffer(bytes: Messages.updateRequest + Messages.setPixelFormat)
        #expect(throws: ClientMessageFilter.Violation.lateSetPixelFormat) { try filter.filter(&more, into: &output) }

        var continuous = ClientMessageFilter(policy: Self.policy)
        var early = ByteBuffer(bytes: [1] + Messages.setPixelFormat + Messages.continuousUpdates + Messages.setPixelFormat)
        #expect(throws: ClientMessageFilter.Violation.lateSetPixelFormat) { try continuous.filter(&early, into: &output) }

        // And before the screen is asked for at all: neatvnc 0.5 would use its framebuffer's.
        var unset = ClientMessageFilter(policy: Self.policy)
        var request = ByteBuffer(bytes: [1] + Messages.updateRequest)
        #expect(throws: ClientMessageFilter.Violation.noPixelFormat) { try unset.filter(&request, into: &output) }

        var odd = ClientMessageFilter(policy: Self.policy)
        var ambiguous = ByteBuffer(bytes: [1, 0, 0, 0, 0] + ServerMessages.formatAmbiguous)
        #expect(throws: ClientMessageFilter.Violation.unmeasurablePixelFormat) { try odd.filter(&ambiguous, into: &output) }

        // An Xvnc desktop's browser may change its format whenever it likes, as before.
        let (passed, _) = try ClientMessageFilterTests.run(ClientMessageFilterTests.full, [1] + Messages.updateRequest + Messages.setPixelFormat)
        #expect(passed == [1] + Messages.updateRequest + Messages.setPixelFormat)
    }
}
