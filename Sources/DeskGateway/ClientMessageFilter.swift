import NIOCore

/// What of a browser's RFB client messages reaches Xvnc, decided message by message.
///
/// The browser is not trusted to honour view-only: whatever it sends is parsed here, after
/// ClientInit, and keyboard, pointer and clipboard messages are dropped before Xvnc sees them.
/// Every message type must be one whose length is known, because a filter that lost its place
/// in the stream could be walked past by a message it cannot measure: an unknown type ends the
/// connection rather than being passed on.
public struct ClientMessageFilter: Sendable {
    /// What the browser may do.
    public struct Policy: Sendable, Equatable {
        /// Drop keyboard, pointer, clipboard, resize and xvp (power) messages.
        public var viewOnly: Bool
        /// Pass ClientCutText (the browser's clipboard to the desktop).
        public var clipboardFromBrowser: Bool

        public init(viewOnly: Bool, clipboardFromBrowser: Bool) {
            self.viewOnly = viewOnly
            self.clipboardFromBrowser = clipboardFromBrowser
        }
    }

    /// Why the stream was ended.
    public enum Violation: Error, Equatable, CustomStringConvertible {
        case unknownMessage(UInt8)
        case oversizedClipboard(Int)
        case oversizedFence(Int)

        public var description: String {
            switch self {
            case .unknownMessage(let type): "the browser sent RFB message type \(type), which the gateway does not pass"
            case .oversizedClipboard(let length): "the browser sent \(length) bytes of clipboard, more than the gateway passes"
            case .oversizedFence(let length): "the browser sent a fence with \(length) bytes of payload (at most 64)"
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

    private enum State: Sendable {
        /// The one-byte ClientInit (the shared flag) comes first.
        case clientInit
        /// Collecting a message's header, until its full length is known.
        case header
        /// The rest of a message whose length is known, passed or dropped.
        case body(remaining: Int, pass: Bool)
    }

    public let policy: Policy
    public let maxClipboardBytes: Int
    private var state: State = .clientInit
    private var header: [UInt8] = []
    /// Messages dropped so far (tests, and the relay's log line at the end).
    public private(set) var droppedMessages = 0

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
            case .header:
                header.append(input.readInteger(as: UInt8.self)!)
                guard let length = try Self.length(of: header, maxClipboardBytes: maxClipboardBytes) else { continue }
                let pass = passes(header[0])
                if pass { output.writeBytes(header) } else { droppedMessages += 1 }
                state = length == header.count ? .header : .body(remaining: length - header.count, pass: pass)
                header.removeAll(keepingCapacity: true)
            }
        }
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
    static func length(of header: [UInt8], maxClipboardBytes: Int) throws(Violation) -> Int? {
        func u16(_ at: Int) -> Int { Int(header[at]) << 8 | Int(header[at + 1]) }
        let type = header[0]
        switch type {
        case MessageType.setPixelFormat: return 20
        case MessageType.framebufferUpdateRequest: return 10
        case MessageType.keyEvent: return 8
        case MessageType.pointerEvent: return 6
        case MessageType.enableContinuousUpdates: return 10
        case MessageType.xvp: return 4
        case MessageType.setEncodings:
            guard header.count >= 4 else { return nil }
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
