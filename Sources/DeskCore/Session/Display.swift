/// An X display number, `:n`, from :1 to :2000. A session on its Unix socket needs no port, so
/// the number is just a name; on TCP its RFB port is a base plus the number (5900 unless
/// `network.port_base` says otherwise), which must stay clear of X's own 6000-6063.
public struct Display: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public static let supportedRange: ClosedRange<Int> = 1...2000
    /// The classic VNC port of display 0: :1 is 5901.
    public static let defaultRFBPortBase = 5900
    /// X's own TCP ports for displays :0 to :63, which no RFB port may take.
    public static let x11PortsInUse: ClosedRange<Int> = 6000...6063

    public let number: Int

    public init(_ number: Int) {
        self.number = number
    }

    /// Parses `:3` or `3`; refuses anything outside `range` with a sentence that names it.
    public init(parsing text: String, range: ClosedRange<Int> = Display.supportedRange) throws(DeskError) {
        let digits = text.hasPrefix(":") ? String(text.dropFirst()) : text
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits) else {
            throw DeskError(.invalidDisplay, "'\(text)' is not a display; write it as :N, for example :3.")
        }
        try self.init(checking: n, range: range)
    }

    /// A display number from a request (a number on the wire), refused outside `range`.
    public init(checking number: Int, range: ClosedRange<Int> = Display.supportedRange) throws(DeskError) {
        guard range.contains(number) else {
            throw DeskError(.invalidDisplay, "display :\(number) is out of range; use :\(range.lowerBound) to :\(range.upperBound).")
        }
        self.number = number
    }

    /// The same display checked against `range` (a request's, once it is decoded).
    public func checked(range: ClosedRange<Int> = Display.supportedRange) throws(DeskError) -> Display {
        try Display(checking: number, range: range)
    }

    /// The VNC (RFB) TCP port Xvnc listens on for this display, counted from `base`.
    public func rfbPort(base: Int = Display.defaultRFBPortBase) -> Int { base + number }
    /// The X11 TCP port an X server would use for this display.
    public var x11Port: Int { 6000 + number }
    public var lockPath: String { "/tmp/.X\(number)-lock" }
    public var socketPath: String { "/tmp/.X11-unix/X\(number)" }

    public var description: String { ":\(number)" }

    public static func < (lhs: Display, rhs: Display) -> Bool { lhs.number < rhs.number }

    public init(from decoder: any Decoder) throws {
        number = try decoder.singleValueContainer().decode(Int.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(number)
    }
}
