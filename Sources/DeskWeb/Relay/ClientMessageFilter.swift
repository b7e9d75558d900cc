import DeskFrontProtocol
import NIOCore

/// What of a browser's RFB client messages reaches Xvnc, decided message by message.
///
/// The browser is not trusted to honour view-only: whatever it sends is parsed here, after
/// ClientInit, and keyboard, pointer and clipboard messages are dropped before Xvnc sees them.
/// Every message type must be one whose length is known, because a filter that lost its place
/// in the stream could be walked past by a message it cannot measure: an unknown type ends the
/// connection rather than being passed on.
///
/// Xvnc must measure every message it is passed as the filter did, or bytes the filter passed as
/// part of one message would be read by Xvnc as another. The one length that depends on what was
/// negotiated is a PointerEvent's: with the ExtendedMouseButtons pseudo-encoding (-316), TigerVNC
/// 1.15 reads one more byte when the mask's bit 7 is set, as soon as the client's latest
/// SetEncodings listed -316, acknowledged or not (SMsgReader::readPointerEvent asks
/// ClientParams::supportsExtendedMouseButtons). So the filter decides what Xvnc hears: it holds
/// each SetEncodings whole, takes -316 out unless the policy says this Xvnc reads it, and measures
/// pointer events by the list it passed on.
public struct ClientMessageFilter: Sendable {
    /// What the browser may do.
    public struct Policy: Sendable, Equatable {
        /// Drop keyboard, pointer, clipboard, resize and xvp (power) messages.
        public var viewOnly: Bool
        /// Pass ClientCutText (the browser's clipboard to the desktop).
        public var clipboardFromBrowser: Bool
        /// The Xvnc behind the gateway reads ExtendedMouseButtons (TigerVNC 1.15 and later), so a
        /// browser may negotiate it. False for Debian 12's 1.12, which knows nothing of -316 and
        /// always reads 6 bytes, and for any server not known to read it: then -316 never
        /// reaches the server, no server acknowledges it, and browsers keep to 6-byte events.
        public var extendedMouseButtons: Bool
        /// The gateway reads the desktop's messages (ServerMessageFilter), so the browser may
        /// ask only for encodings it measures, and set its pixel format only before it first
        /// asks for the screen: a format changed while an update is on its way would have the
        /// update measured by the wrong one.
        public var measuredDesktop: Bool

        public init(viewOnly: Bool, clipboardFromBrowser: Bool, extendedMouseButtons: Bool = false, measuredDesktop: Bool = false) {
            self.viewOnly = viewOnly
            self.clipboardFromBrowser = clipboardFromBrowser
            self.extendedMouseButtons = extendedMouseButtons
            self.measuredDesktop = measuredDesktop
        }
    }

    /// Why the stream was ended.
    public enum Violation: Error, Equatable, CustomStringConvertible {
        case unknownMessage(UInt8)
        case oversizedClipboard(Int)
        case oversizedFence(Int)
        case tooManyEncodings(Int)
        case lateSetPixelFormat
        case unmeasurablePixelFormat
        case extendedClipboard
        case noPixelFormat

        public var description: String {
            switch self {
            case .unknownMessage(let type): "the browser sent RFB message type \(type), which the gateway does not pass"
            case .oversizedClipboard(let length): "the browser sent \(length) bytes of clipboard, more than the gateway passes"
            case .oversizedFence(let length): "the browser sent a fence with \(length) bytes of payload (at most 64)"
            case .tooManyEncodings(let count): "the browser listed \(count) encodings (at most \(ClientMessageFilter.maxEncodings))"
            case .lateSetPixelFormat: "the browser changed its pixel format after asking for the screen, which the gateway does not pass to this desktop"
            case .unmeasurablePixelFormat: "the browser asked for a pixel format the gateway cannot measure for this desktop"
            case .extendedClipboard: "the browser sent an extended clipboard message, which this desktop never offered"
            case .noPixelFormat: "the browser asked for the screen before it set its pixel format, which the gateway needs for this desktop"
            }
        }
    }

    /// RFB client message types (RFC 6143 §7.5 and the extensions noVNC speaks).
    public enum MessageType {
        public static let setPixelFormat: UInt8 = 0
        public static let setEncodings: UInt8 = 2
        public static let framebufferUpdateRequest: UInt8 = 3
        public static let keyEvent: UInt8 = 4
        public static let pointerEvent: UInt8 = 5
        public static let clientCutText: UInt8 = 6
        public static let enableContinuousUpdates: UInt8 = 150
        public static let clientFence: UInt8 = 248
        public static let xvp: UInt8 = 250
        public static let setDesktopSize: UInt8 = 251
        public static let qemu: UInt8 = 255
    }

    /// The pseudo-encoding that makes a PointerEvent with the mask's bit 7 set 7 bytes long.
    public static let extendedMouseButtons: Int32 = -316
    /// A SetEncodings is held whole before any of it is passed: 4 KiB at most. noVNC lists about
    /// 30 encodings, TigerVNC's viewer about 40.
    public static let maxEncodings = 1024

    private enum State: Sendable {
        /// The one-byte ClientInit (the shared flag) comes first.
        case clientInit
        /// Collecting a message's header, until its full length is known.
        case header
        /// The rest of a message whose length is known, passed or dropped.
        case body(remaining: Int, pass: Bool)
        /// The rest of a message of `length` bytes that is held whole (SetEncodings, and a
        /// measured desktop's SetPixelFormat), collected in `header`.
        case held(length: Int)
    }

    public let policy: Policy
    public let maxClipboardBytes: Int
    private var state: State = .clientInit
    private var header: [UInt8] = []
    /// Whether the SetEncodings last passed to Xvnc listed -316: then Xvnc reads a PointerEvent
    /// with the mask's bit 7 set as 7 bytes.
    private var extendedPointerEvents = false
    /// Messages dropped so far (tests, and the relay's log line at the end).
    public private(set) var droppedMessages = 0
    /// The pixel format of the SetPixelFormat last passed, for a measured desktop.
    public private(set) var pixelFormat: PixelFormat?
    /// Every encoding passed on in a SetEncodings so far, for a measured desktop (a server may
    /// still answer in one a later SetEncodings left out, for an update already on its way).
    public private(set) var passedEncodings: Set<Int32> = []
    /// Whether a FramebufferUpdateRequest or EnableContinuousUpdates has been passed: from then
    /// on, updates may be on their way.
    private var screenRequested = false

    public init(policy: Policy, maxClipboardBytes: Int = 1 << 20) {
        self.policy = policy
        self.maxClipboardBytes = maxClipboardBytes
        header.reserveCapacity(9)
    }

    /// Reads all of `input`, appending to `output` what may reach Xvnc.
    public mutating func filter(_ input: inout ByteBuffer, into output: inout ByteBuffer) throws(Violation) {
        while input.readableBytes > 0 {
            switch state {
            case .clientInit:
                let shared = input.readInteger(as: UInt8.self)!
                // A view-only viewer asks for a shared session whatever it says, so it can never
                // make Xvnc disconnect the desktop's owner.
                output.writeInteger(policy.viewOnly ? 1 : shared)
                state = .header
            case .body(let remaining, let pass):
                let count = min(remaining, input.readableBytes)
                let slice = input.readSlice(length: count)!
                if pass { output.writeImmutableBuffer(slice) }
                state = remaining == count ? .header : .body(remaining: remaining - count, pass: pass)
            case .held(let length):
                header += input.readBytes(length: min(length - header.count, input.readableBytes))!
                guard header.count == length else { continue }
                try passHeld(into: &output)
                state = .header
            case .header:
                header.append(input.readInteger(as: UInt8.self)!)
                guard let length = try Self.length(of: header, maxClipboardBytes: maxClipboardBytes,
                                                   extendedPointerEvents: extendedPointerEvents) else { continue }
                // A negative length is the extended clipboard's, which a measured desktop is never
                // offered (it is taken out of SetEncodings): wayvnc would read the length as a
                // huge one, and the two would measure the stream apart.
                if policy.measuredDesktop, header[0] == MessageType.clientCutText, header[4] & 0x80 != 0 { throw .extendedClipboard }
                if header[0] == MessageType.setEncodings || (header[0] == MessageType.setPixelFormat && policy.measuredDesktop) {
                    if header.count == length { try passHeld(into: &output) } else { state = .held(length: length) }
                    continue
                }
                if header[0] == MessageType.framebufferUpdateRequest || header[0] == MessageType.enableContinuousUpdates {
                    // noVNC sets its format first; without one, neatvnc 0.5 would use its
                    // framebuffer's, which the gateway cannot see.
                    if policy.measuredDesktop, pixelFormat == nil { throw .noPixelFormat }
                    screenRequested = true
                }
                let pass = passes(header[0])
                if pass { output.writeBytes(header) } else { droppedMessages += 1 }
                state = length == header.count ? .header : .body(remaining: length - header.count, pass: pass)
                header.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Passes the message held whole in `header` on.
    private mutating func passHeld(into output: inout ByteBuffer) throws(Violation) {
        guard header[0] == MessageType.setPixelFormat else { return passEncodings(into: &output) }
        guard !screenRequested else { throw .lateSetPixelFormat }
        guard let format = PixelFormat(header[4..<20]), format.isMeasurable else { throw .unmeasurablePixelFormat }
        pixelFormat = format
        output.writeBytes(header)
        header.removeAll(keepingCapacity: true)
    }

    /// Passes the SetEncodings in `header` on, without -316 unless this Xvnc reads it (and for a
    /// measured desktop, with only what the gateway measures), and notes whether Xvnc now
    /// measures pointer events by it (each SetEncodings replaces the last).
    private mutating func passEncodings(into output: inout ByteBuffer) {
        var encodings = stride(from: 4, to: header.count, by: 4).map { at in
            Int32(bitPattern: header[at..<(at + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }
        if !policy.extendedMouseButtons { encodings.removeAll { $0 == Self.extendedMouseButtons } }
        if policy.measuredDesktop {
            // wayvnc (neatvnc) reads at most 32 encodings of a SetEncodings and only their bytes:
            // a longer list would have the rest read as messages of their own, which the filter
            // never saw. The measured ones are 29, each passed once.
            var seen = Set<Int32>()
            encodings = encodings.filter { ServerMessageFilter.isMeasurable($0) && seen.insert($0).inserted }
            encodings = Array(encodings.prefix(ServerMessageFilter.maxEncodings))
        }
        extendedPointerEvents = encodings.contains(Self.extendedMouseButtons)
        // Kept for a measured desktop only, whose list holds measured encodings alone (29 at
        // most): another browser's lists could grow it without end.
        if policy.measuredDesktop { passedEncodings.formUnion(encodings) }
        output.writeBytes(header[0...1])
        output.writeInteger(UInt16(encodings.count))
        for encoding in encodings { output.writeInteger(encoding) }
        header.removeAll(keepingCapacity: true)
    }

    private func passes(_ type: UInt8) -> Bool {
        switch type {
        case MessageType.keyEvent, MessageType.pointerEvent, MessageType.qemu, MessageType.xvp:
            !policy.viewOnly
        case MessageType.clientCutText:
            !policy.viewOnly && policy.clipboardFromBrowser
        // Resizing the owner's desktop is input too: a view-only viewer watches it as it is.
        case MessageType.setDesktopSize:
            !policy.viewOnly
        default:
            true
        }
    }

    /// A message's whole length once `header` holds enough of it to tell; nil while it does not.
    static func length(of header: [UInt8], maxClipboardBytes: Int, extendedPointerEvents: Bool) throws(Violation) -> Int? {
        func u16(_ at: Int) -> Int { Int(header[at]) << 8 | Int(header[at + 1]) }
        let type = header[0]
        switch type {
        case MessageType.setPixelFormat: return 20
        case MessageType.framebufferUpdateRequest: return 10
        case MessageType.keyEvent: return 8
        case MessageType.pointerEvent:
            guard extendedPointerEvents else { return 6 }
            guard header.count >= 2 else { return nil }
            return header[1] & 0x80 != 0 ? 7 : 6
        case MessageType.enableContinuousUpdates: return 10
        case MessageType.xvp: return 4
        case MessageType.setEncodings:
            guard header.count >= 4 else { return nil }
            guard u16(2) <= maxEncodings else { throw .tooManyEncodings(u16(2)) }
            return 4 + 4 * u16(2)
        case MessageType.clientCutText:
            guard header.count >= 8 else { return nil }
            // The extended clipboard (a pseudo-encoding both noVNC and TigerVNC speak) sends
            // the length negated: its magnitude is the length either way.
            let signed = Int32(bitPattern: header[4...7].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let length = Int(signed.magnitude)
            guard length <= maxClipboardBytes else { throw .oversizedClipboard(length) }
            return 8 + length
        case MessageType.clientFence:
            guard header.count >= 9 else { return nil }
            let length = Int(header[8])
            guard length <= 64 else { throw .oversizedFence(length) }
            return 9 + length
        case MessageType.setDesktopSize:
            guard header.count >= 8 else { return nil }
            return 8 + 16 * Int(header[6])
        case MessageType.qemu:
            guard header.count >= 2 else { return nil }
            // Only QEMU's extended key event (subtype 0) is something noVNC sends.
            guard header[1] == 0 else { throw .unknownMessage(type) }
            return 12
        default:
            throw .unknownMessage(type)
        }
    }
}
