/// What the gateway has counted, as deskd-web tells deskd over the front socket
/// (`FrontMessage.counts`) and deskd's metrics show it: the values only. The counting itself is
/// `GatewayMetrics` (DeskGatewayMetrics), which both processes run.
public enum GatewayCounts {
    /// Why the gateway turned a connection or request away.
    public enum Refusal: String, Sendable, CaseIterable, Comparable, Codable, CodingKeyRepresentable {
        /// Too many connections open.
        case capacity
        /// Too many connections open from the same remote address.
        case addressCapacity = "address-capacity"
        /// A WebSocket upgrade (or an exchange) from a page of another origin.
        case origin
        /// An upgrade without a cookie, or with one that is unknown, used or expired.
        case cookie
        /// A link token that is unknown, used or expired.
        case token
        /// A request or handshake that did not complete in time.
        case timeout
        /// HTTP the gateway could not parse, or a header block over the limit.
        case malformedRequest = "malformed-request"
        /// A WebSocket frame that is oversized, unmasked, or not binary.
        case frame
        /// RFB the browser should not have sent (a wrong version, an unknown message).
        case rfb
        /// The session's Xvnc could not be reached, was not the session's, or refused the password.
        case desktop
        /// A request naming a signed-in user (the single sign-on header) from a peer that is not
        /// a trusted proxy: a browser writing the header itself.
        case forgedUser = "forged-user"
        /// A portal page's live updates over a login's, an account's or the gateway's share of streams.
        case streamCapacity = "stream-capacity"
        /// A connection from this host whose owner the kernel would not name (a socket bound to a
        /// device, or closed before it was accepted): counted as no one, it is refused.
        case unknownOwner = "unknown-owner"

        public static func < (lhs: Refusal, rhs: Refusal) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Why the gateway ended a relay that was under way.
    public enum Cut: String, Sendable, CaseIterable, Comparable, Codable, CodingKeyRepresentable {
        /// Nothing in either direction, not even an answer to the gateway's ping, for the idle timeout.
        case idle
        /// The browser took nothing the gateway sent for the stall timeout: its answers would
        /// otherwise pile up in deskd.
        case notReading = "not-reading"

        public static func < (lhs: Cut, rhs: Cut) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The counters at one moment.
    public struct Snapshot: Sendable, Equatable, Codable {
        public var connectionsOpen: Int
        public var connectionsOpenedTotal: Int
        /// Browsers relayed to a desktop now (they also count as connections).
        public var relaysOpen: Int
        public var relaysOpenedTotal: Int
        public var exchangesAccepted: Int
        public var refused: [Refusal: Int]
        public var cut: [Cut: Int]

        public init(connectionsOpen: Int, connectionsOpenedTotal: Int, relaysOpen: Int, relaysOpenedTotal: Int, exchangesAccepted: Int,
                    refused: [Refusal: Int], cut: [Cut: Int]) {
            self.connectionsOpen = connectionsOpen
            self.connectionsOpenedTotal = connectionsOpenedTotal
            self.relaysOpen = relaysOpen
            self.relaysOpenedTotal = relaysOpenedTotal
            self.exchangesAccepted = exchangesAccepted
            self.refused = refused
            self.cut = cut
        }

        /// Nothing counted: what a web front that has just connected has told deskd so far.
        public static let zero = Snapshot(connectionsOpen: 0, connectionsOpenedTotal: 0, relaysOpen: 0, relaysOpenedTotal: 0, exchangesAccepted: 0,
                                          refused: [:], cut: [:])

        /// Every count between 0 and 2^40, and no more refusal or cut reasons than there are:
        /// what deskd takes from a web front (a taken-over one could send anything).
        public var isPlausible: Bool {
            let ceiling = 1 << 40
            let counts = [connectionsOpen, connectionsOpenedTotal, relaysOpen, relaysOpenedTotal, exchangesAccepted]
                + Array(refused.values) + Array(cut.values)
            return counts.allSatisfy { (0...ceiling).contains($0) }
        }

        /// The totals kept, nothing open: what a web front that has gone leaves behind.
        public var closed: Snapshot {
            var closed = self
            closed.connectionsOpen = 0
            closed.relaysOpen = 0
            return closed
        }
    }
}
