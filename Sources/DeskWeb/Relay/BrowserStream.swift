import DeskFrontProtocol
import NIOCore

/// The gateway's side of RFB towards the browser: an RFB 3.8 server that offers only security
/// type None (the gateway has already authenticated to Xvnc with the session's password), and
/// then the client-message filter on everything the browser sends.
///
/// Pure bytes in, bytes out, so the whole conversation is unit-tested without a socket.
public struct BrowserStream: Sendable {
    public static let serverVersion = Array("RFB 003.008\n".utf8)

    public enum Violation: Error, Equatable, CustomStringConvertible {
        case notRFB38
        case securityType(UInt8)
        case message(ClientMessageFilter.Violation)
        /// The desktop refused or could not be reached; the browser has been told why.
        case refused(String)

        public var description: String {
            switch self {
            case .notRFB38: "the browser does not speak RFB 3.8"
            case .securityType(let type): "the browser chose security type \(type), not None"
            case .message(let violation): violation.description
            case .refused(let why): why
            }
        }
    }

    private enum Step: Sendable {
        case version
        case securityType
        case relaying
    }

    private var step: Step = .version
    private var pending: [UInt8] = []
    public private(set) var filter: ClientMessageFilter
    /// Set when the desktop could not be reached: the browser hears this reason instead of a
    /// security type, which noVNC shows to its user.
    private let refusal: String?

    public init(filter: ClientMessageFilter, refusal: String? = nil) {
        self.filter = filter
        self.refusal = refusal
    }

    /// True once the handshake is over and bytes flow to Xvnc.
    public var isRelaying: Bool {
        if case .relaying = step { return true }
        return false
    }

    /// Reads all of `input`: what to answer the browser goes to `reply`, what may reach Xvnc to
    /// `forward`. A thrown `.refused` comes after its reply has been written to `reply`.
    public mutating func consume(_ input: inout ByteBuffer, reply: inout [UInt8], forward: inout ByteBuffer) throws(Violation) {
        while input.readableBytes > 0 {
            switch step {
            case .version:
                let take = min(12 - pending.count, input.readableBytes)
                pending += input.readBytes(length: take)!
                guard pending.count == 12 else { return }
                guard pending == Self.serverVersion else { throw .notRFB38 }
                pending.removeAll()
                if let refusal {
                    // No security types, then the reason (RFC 6143 §7.1.2).
                    let reason = Array(refusal.utf8)
                    reply += [0] + Self.bigEndian(UInt32(reason.count)) + reason
                    throw .refused(refusal)
                }
                reply += [1, 1]   // one security type: None
                step = .securityType
            case .securityType:
                let chosen = input.readInteger(as: UInt8.self)!
                guard chosen == 1 else { throw .securityType(chosen) }
                reply += [0, 0, 0, 0]   // SecurityResult: OK
                step = .relaying
            case .relaying:
                do throws(ClientMessageFilter.Violation) {
                    try filter.filter(&input, into: &forward)
                } catch {
                    throw .message(error)
                }
            }
        }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
