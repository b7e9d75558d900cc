/// An X display number, `:n`. deskd works within :1...:99 because 5900+100 collides with X's 6000.
public struct Display: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public static let supportedRange: ClosedRange<Int> = 1...99

    public let number: Int

    public init(_ number: Int) {
        self.number = number
    }

    /// Parses `:3` or `3`; refuses anything outside `range` with a sentence that names it.
    public init(parsing text: String, range: ClosedRange<Int> = Display.supportedRange) throws(DeskError) {
        let digits = text.hasPrefix(":") ? String(text.dropFirst()) : text
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let n = Int(digits) else {
            throw DeskError(.invalidDisplay, "'\(text)' is not a display; write it as :N, for example :3.")
        }
        guard range.contains(n) else {
            throw DeskError(.invalidDisplay, "display :\(n) is out of range; use :\(range.lowerBound) to :\(range.upperBound).")
        }
        self.number = n
    }

    /// The VNC (RFB) TCP port Xvnc listens on for this display.
    public var rfbPort: Int { 5900 + number }
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
