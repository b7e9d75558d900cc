/// An RFB pixel format (RFC 6143 §7.4), as far as the gateway needs it to measure a desktop's
/// framebuffer updates: how many bytes a pixel takes, and how many a Tight "TPIXEL" does.
public struct PixelFormat: Sendable, Equatable {
    public var bitsPerPixel: UInt8
    public var depth: UInt8
    public var trueColour: Bool
    public var redMax: UInt16
    public var greenMax: UInt16
    public var blueMax: UInt16

    /// The 16 bytes of a PIXEL_FORMAT, as ServerInit and SetPixelFormat carry it.
    public init?(_ bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count == 16 else { return nil }
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        bitsPerPixel = bytes[0]
        depth = bytes[1]
        trueColour = bytes[3] != 0
        redMax = u16(4)
        greenMax = u16(6)
        blueMax = u16(8)
    }

    /// Whether a server's pixels in this format have one length everyone agrees on: 32 bits of
    /// true colour at depth 24, 8 bits a colour, the format every browser's noVNC asks for and
    /// wayvnc's own. Nothing else is measured: neatvnc closes a client that asks for a colour
    /// map (0.5) or sends 8-bit pixels whatever depth was asked (0.8 and later), and at 32 bits
    /// TigerVNC sends Tight's pixels in 3 bytes only for depth 24 with 8 bits a colour where
    /// neatvnc does for any depth up to 24.
    public var isMeasurable: Bool {
        bitsPerPixel == 32 && trueColour && depth == 24 && redMax == 255 && greenMax == 255 && blueMax == 255
    }

    public var bytesPerPixel: Int { Int(bitsPerPixel) / 8 }

    /// A Tight TPIXEL: 3 bytes for 32-bit pixels of depth 24 (the padding byte is not sent).
    public var tightPixelBytes: Int { bitsPerPixel == 32 ? 3 : bytesPerPixel }
}
