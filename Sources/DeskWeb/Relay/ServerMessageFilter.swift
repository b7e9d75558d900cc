import NIOCore

/// What of a desktop's RFB server messages reaches a browser, for a desktop whose server cannot
/// be told to keep things from a viewer: wayvnc gives every login input and the desktop's
/// clipboard, and knows no view-only password. (Xvnc can: a view-only browser logs in with the
/// view-only password and Xvnc runs with -SendCutText=0 where the clipboard must not leave, so
/// its stream is relayed unread.)
///
/// The filter reads every message from ServerInit on and drops ServerCutText unless the policy
/// lets the desktop's clipboard reach this browser. To find the messages in the stream it must
/// measure every framebuffer update, and an update's length depends on its encodings and on the
/// pixel format: so the gateway lets the browser ask only for encodings measured here
/// (`measurableEncodings`, enforced by ClientMessageFilter) and change the pixel format only
/// before it first asks for the screen, and anything the filter cannot measure ends the
/// connection rather than being passed on: a filter that lost its place could pass a
/// ServerCutText as pixels.
///
/// The stream is never held whole: headers (at most about a kilobyte, a Tight palette) are
/// collected, bodies are passed or dropped as they come.
public struct ServerMessageFilter: Sendable {
    public struct Policy: Sendable, Equatable {
        /// Pass ServerCutText (the desktop's clipboard, to the browser).
        public var clipboardToBrowser: Bool

        public init(clipboardToBrowser: Bool) {
            self.clipboardToBrowser = clipboardToBrowser
        }
    }

    public enum Violation: Error, Equatable, CustomStringConvertible {
        case unknownMessage(UInt8)
        case unknownEncoding(Int32)
        case unrequestedEncoding(Int32)
        case oversizedDesktopName(Int)
        case unmeasurablePixelFormat
        case tightControl(UInt8)
        case ambiguousTight(Int)
        case oversizedFence(Int)

        public var description: String {
            switch self {
            case .unknownMessage(let type): "the desktop sent RFB message type \(type), which the gateway does not pass"
            case .unknownEncoding(let encoding): "the desktop sent a rectangle in encoding \(encoding), which the gateway cannot measure"
            case .unrequestedEncoding(let encoding): "the desktop sent a rectangle in encoding \(encoding), which the browser never asked for"
            case .oversizedDesktopName(let length): "the desktop sent a name of \(length) bytes (at most \(ServerMessageFilter.maxDesktopNameBytes))"
            case .unmeasurablePixelFormat: "the desktop's pixel format is not one the gateway can measure"
            case .tightControl(let control): "the desktop sent a Tight rectangle with control byte \(control), which the gateway cannot measure"
            case .ambiguousTight(let bytes): "the desktop sent a Tight rectangle of \(bytes) bytes of pixels, which the specification sends as they are and wayvnc after a length: the gateway cannot tell which"
            case .oversizedFence(let length): "the desktop sent a fence with \(length) bytes of payload (at most 64)"
            }
        }
    }

    /// RFB server message types (RFC 6143 §7.6 and the extensions the measured encodings bring).
    public enum MessageType {
        public static let framebufferUpdate: UInt8 = 0
        public static let setColourMapEntries: UInt8 = 1
        public static let bell: UInt8 = 2
        public static let serverCutText: UInt8 = 3
        public static let endOfContinuousUpdates: UInt8 = 150
        public static let fence: UInt8 = 248
    }

    /// Encoding numbers (RFC 6143 §7.7 and the RFB community registry).
    public enum Encoding {
        public static let raw: Int32 = 0
        public static let copyRect: Int32 = 1
        public static let tight: Int32 = 7
        public static let zrle: Int32 = 16
        public static let cursor: Int32 = -239
        public static let desktopSize: Int32 = -223
        public static let lastRect: Int32 = -224
        public static let qemuExtendedKeyEvent: Int32 = -258
        public static let qemuLEDState: Int32 = -261
        public static let desktopName: Int32 = -307
        public static let extendedDesktopSize: Int32 = -308
        public static let fence: Int32 = -312
        public static let continuousUpdates: Int32 = -313
        /// Not measured: neatvnc labels its VMware LED state -261 (QEMU's) with VMware's 4-byte
        /// body, where -261's is 1 byte (the second cold review).
        public static let vmwareLEDState = Int32(bitPattern: 0x574D_5668)
    }

    /// What a browser may ask a measured desktop for in SetEncodings: the rectangles measured
    /// here, the pseudo-encodings whose messages are, and the Tight quality and compression
    /// levels, which bring no rectangle of their own. The rest (Hextile, RRE, TightPNG, JPEG,
    /// H.264, the extended clipboard, ExtendedMouseButtons, xvp, …) is taken out of the list.
    /// Each is passed once, and no more than `maxEncodings` of them.
    public static func isMeasurable(_ encoding: Int32) -> Bool {
        switch encoding {
        case Encoding.raw, Encoding.copyRect, Encoding.tight, Encoding.zrle, Encoding.cursor, Encoding.desktopSize,
             Encoding.lastRect, Encoding.qemuExtendedKeyEvent, Encoding.qemuLEDState, Encoding.desktopName,
             Encoding.extendedDesktopSize, Encoding.fence, Encoding.continuousUpdates:
            true
        case -32 ... -23, -256 ... -247:   // JPEG quality level, compression level
            true
        default:
            false
        }
    }

    /// wayvnc (neatvnc, every release to date) reads no more than 32 encodings of a SetEncodings.
    public static let maxEncodings = 32
    /// A desktop's name: a title, not a body of bytes to pass unread.
    public static let maxDesktopNameBytes = 4096

    private enum State: Sendable {
        /// ServerInit's fixed part (24 bytes), then its name.
        case serverInit
        /// A message's header, until its length is known.
        case message
        /// A rectangle's header (with what of its body tells the body's length).
        case rectangle
        /// The rest of a message or rectangle, passed or dropped.
        case body(remaining: Int, pass: Bool)
    }

    public let policy: Policy
    private var state: State = .serverInit
    private var header: [UInt8] = []
    /// Rectangles left in the framebuffer update being read.
    private var rectangles = 0
    /// The pixel format the browser asked for, once the gateway passed its SetPixelFormat on.
    /// The only one rectangles are measured in: a measured desktop's browser must set it before
    /// it asks for the screen (ClientMessageFilter), since neatvnc 0.5 takes the format of its
    /// framebuffer at the first request otherwise, which need not be ServerInit's.
    public var requestedFormat: PixelFormat?
    /// Every encoding the gateway has passed the desktop in a SetEncodings. A rectangle in any
    /// other (but raw, which a server may always send) is one the desktop was never asked for:
    /// the filter has lost its place, or the server mislabels one, and either way it stops.
    public var offeredEncodings: Set<Int32> = []
    /// ServerCutText messages dropped so far.
    public private(set) var droppedMessages = 0

    public init(policy: Policy) {
        self.policy = policy
        header.reserveCapacity(32)
    }

    /// What of one read may reach the browser.
    public enum Passed: Equatable {
        /// All of it, as it came: the read itself goes on, with no copy (the common case: the
        /// bodies of framebuffer updates are most of the stream).
        case whole
        /// These bytes: something was dropped, or part of a header is held for the next read, or
        /// one held from an earlier read goes out now.
        case rewritten(ByteBuffer)
    }

    /// Reads all of `input`; what may reach the browser.
    public mutating func read(_ input: ByteBuffer) throws(Violation) -> Passed {
        var spans = Spans()
        try consume(input, into: &spans)
        if spans.pieces.isEmpty, input.readableBytes == 0 { return .whole }
        if spans.pieces.count == 1, case .input(let range) = spans.pieces[0], range == 0..<input.readableBytes { return .whole }
        return .rewritten(spans.bytes(of: input))
    }

    /// Reads all of `input`, appending to `output` what may reach the browser; on a violation,
    /// what the read passed before it.
    public mutating func filter(_ input: inout ByteBuffer, into output: inout ByteBuffer) throws(Violation) {
        var spans = Spans()
        defer {
            var passed = spans.bytes(of: input)
            output.writeBuffer(&passed)
            input.moveReaderIndex(to: input.writerIndex)
        }
        try consume(input, into: &spans)
    }

    /// What of one read passes: ranges of the read itself, and header bytes held from earlier reads.
    struct Spans {
        enum Piece {
            case input(Range<Int>)
            case carried([UInt8])
        }

        var pieces: [Piece] = []

        mutating func pass(_ range: Range<Int>) {
            guard !range.isEmpty else { return }
            if case .input(let last)? = pieces.last, last.upperBound == range.lowerBound {
                pieces[pieces.count - 1] = .input(last.lowerBound..<range.upperBound)
            } else {
                pieces.append(.input(range))
            }
        }

        mutating func pass(_ bytes: [UInt8]) {
            if !bytes.isEmpty { pieces.append(.carried(bytes)) }
        }

        func bytes(of input: ByteBuffer) -> ByteBuffer {
            var output = ByteBuffer()
            for piece in pieces {
                switch piece {
                case .input(let range): output.writeImmutableBuffer(input.getSlice(at: input.readerIndex + range.lowerBound, length: range.count)!)
                case .carried(let bytes): output.writeBytes(bytes)
                }
            }
            return output
        }
    }

    /// The state machine over one read. Offsets are from the read's first readable byte.
    private mutating func consume(_ input: ByteBuffer, into spans: inout Spans) throws(Violation) {
        let count = input.readableBytes, base = input.readerIndex
        var at = 0
        // Where in this read the header being collected began; nil if an earlier read began it.
        var headerStart: Int? = nil
        /// The next byte into the header.
        func collect(_ header: inout [UInt8]) {
            if header.isEmpty { headerStart = at }
            header.append(input.getInteger(at: base + at, as: UInt8.self)!)
            at += 1
        }
        /// The whole header goes on, from this read where it began in it.
        func passHeader(_ header: [UInt8], into spans: inout Spans) {
            if let start = headerStart { spans.pass(start..<at) } else { spans.pass(header) }
        }
        while at < count {
            switch state {
            case .body(let remaining, let pass):
                let length = min(remaining, count - at)
                if pass { spans.pass(at..<(at + length)) }
                at += length
                finishBody(remaining: remaining - length, pass: pass)
            case .serverInit:
                collect(&header)
                guard header.count == 24 else { continue }
                let nameLength = Int(Self.u32(header, 20))
                passHeader(header, into: &spans)
                header.removeAll(keepingCapacity: true)
                finishBody(remaining: nameLength, pass: true)
            case .message:
                collect(&header)
                guard let measured = try Self.measureMessage(header) else { continue }
                if header[0] == MessageType.framebufferUpdate {
                    passHeader(header, into: &spans)
                    rectangles = Int(Self.u16(header, 2))
                    header.removeAll(keepingCapacity: true)
                    state = .rectangle
                    nextRectangle()
                    continue
                }
                let pass = header[0] != MessageType.serverCutText || policy.clipboardToBrowser
                if pass { passHeader(header, into: &spans) } else { droppedMessages += 1 }
                header.removeAll(keepingCapacity: true)
                finishBody(remaining: measured, pass: pass)
            case .rectangle:
                collect(&header)
                guard let format = requestedFormat, format.isMeasurable else { throw .unmeasurablePixelFormat }
                if header.count == 12, case let encoding = Self.encoding(header), encoding != Encoding.raw, !offeredEncodings.contains(encoding) {
                    throw .unrequestedEncoding(encoding)
                }
                guard let measured = try Self.measureRectangle(header, format: format) else { continue }
                passHeader(header, into: &spans)
                if Self.encoding(header) == Encoding.lastRect { rectangles = 0 } else { rectangles -= 1 }
                header.removeAll(keepingCapacity: true)
                finishBody(remaining: measured, pass: true)
            }
        }
    }

    /// After a body (or `remaining` of it): the next rectangle of the update, or the next message.
    private mutating func finishBody(remaining: Int, pass: Bool) {
        guard remaining == 0 else {
            state = .body(remaining: remaining, pass: pass)
            return
        }
        state = .rectangle
        nextRectangle()
    }

    /// The update goes on with its next rectangle, or ends.
    private mutating func nextRectangle() {
        if case .rectangle = state, rectangles == 0 { state = .message }
    }
}
