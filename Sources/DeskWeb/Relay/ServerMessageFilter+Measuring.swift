import NIOCore

/// How long each server message and rectangle is, from its header: what lets the filter find the
/// next message without holding the stream (ServerMessageFilter).
extension ServerMessageFilter {

    /// A message's body length once `header` holds enough of it to tell (a framebuffer
    /// update's header is 4 bytes, its rectangles follow); nil while it does not.
    static func measureMessage(_ header: [UInt8]) throws(Violation) -> Int? {
        switch header[0] {
        case MessageType.framebufferUpdate:
            return header.count == 4 ? 0 : nil
        case MessageType.setColourMapEntries:
            return header.count == 6 ? 6 * Int(u16(header, 4)) : nil
        case MessageType.bell, MessageType.endOfContinuousUpdates:
            return 0
        case MessageType.serverCutText:
            // The extended clipboard sends its length negated; it is never negotiated here, but
            // the magnitude is the length either way.
            return header.count == 8 ? Int(Int32(bitPattern: u32(header, 4)).magnitude) : nil
        case MessageType.fence:
            guard header.count == 9 else { return nil }
            guard header[8] <= 64 else { throw .oversizedFence(Int(header[8])) }
            return Int(header[8])
        default:
            throw .unknownMessage(header[0])
        }
    }

    /// A rectangle's body length once `header` holds its 12 bytes and whatever of the body
    /// tells its length (ZRLE's length, a Tight rectangle's control byte, filter, palette and
    /// compact length, …); nil while it does not.
    static func measureRectangle(_ header: [UInt8], format: PixelFormat) throws(Violation) -> Int? {
        guard header.count >= 12 else { return nil }
        let width = Int(u16(header, 4)), height = Int(u16(header, 6))
        switch encoding(header) {
        case Encoding.raw:
            return width * height * format.bytesPerPixel
        case Encoding.copyRect:
            return 4
        case Encoding.zrle:
            return header.count == 16 ? Int(u32(header, 12)) : nil
        case Encoding.desktopName:
            guard header.count == 16 else { return nil }
            let length = Int(u32(header, 12))
            guard length <= maxDesktopNameBytes else { throw .oversizedDesktopName(length) }
            return length
        case Encoding.tight:
            return try measureTight(header[12...], width: width, height: height, format: format)
        case Encoding.cursor:
            return width * height * format.bytesPerPixel + (width + 7) / 8 * height
        case Encoding.desktopSize, Encoding.lastRect, Encoding.qemuExtendedKeyEvent:
            return 0
        case Encoding.qemuLEDState:
            return 1
        case Encoding.extendedDesktopSize:
            return header.count == 16 ? 16 * Int(header[12]) : nil
        case let other:
            throw .unknownEncoding(other)
        }
    }

    /// A Tight rectangle (the TightVNC protocol, as in rfbproto): a control byte; a fill's one
    /// pixel; a JPEG's compact length; or basic compression's optional filter (a palette brings
    /// its colours), then the data, sent as is when under 12 bytes, else after a compact length.
    static func measureTight(_ tight: ArraySlice<UInt8>, width: Int, height: Int, format: PixelFormat) throws(Violation) -> Int? {
        let start = tight.startIndex
        guard let control = tight.first else { return nil }
        switch control >> 4 {
        case 0x8:   // fill
            return format.tightPixelBytes
        case 0x9:   // JPEG
            return compactLength(tight, at: start + 1)
        case 0xA...:   // PNG (TightPNG, never negotiated) or nothing defined
            throw .tightControl(control)
        default:
            break
        }
        var at = start + 1, rowBytes = width * format.tightPixelBytes
        if control & 0x40 != 0 {
            guard tight.count >= 2 else { return nil }
            at += 1
            switch tight[start + 1] {
            case 0, 2:   // copy, gradient
                break
            case 1:   // palette
                guard tight.endIndex > at else { return nil }
                let colours = Int(tight[at]) + 1
                // One colour: 1 bit a pixel to noVNC and TigerVNC, 8 to the specification's text.
                guard colours >= 2 else { throw .tightControl(control) }
                at += 1 + colours * format.tightPixelBytes
                guard tight.endIndex >= at else { return nil }
                rowBytes = colours == 2 ? (width + 7) / 8 : width
            default:
                throw .tightControl(control)
            }
        }
        let size = rowBytes * height
        // Under 12 bytes the specification sends the pixels as they are, but neatvnc writes a
        // length first all the same (only its 64×64 grid's last tile can be that small, on a
        // screen whose width and height are both 1 to 3 past a multiple of 64): which one came
        // cannot be told, and a guess could pass what follows unread. deskd starts no Wayland
        // desktop of such a size.
        guard size >= 12 else { throw .ambiguousTight(size) }
        return compactLength(tight, at: at)
    }

    /// Tight's compact length at `at`: 1 to 3 bytes, 7 bits each but the third's 8; nil until
    /// its last byte is in.
    static func compactLength(_ bytes: ArraySlice<UInt8>, at: Int) -> Int? {
        var value = 0
        for index in 0..<3 {
            guard bytes.endIndex > at + index else { return nil }
            let byte = Int(bytes[at + index])
            if index == 2 { return value | byte << 14 }
            value |= (byte & 0x7F) << (7 * index)
            if byte & 0x80 == 0 { return value }
        }
        return value
    }

    static func encoding(_ header: [UInt8]) -> Int32 { Int32(bitPattern: u32(header, 8)) }

    static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bytes[at..<(at + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}
