/// A framebuffer size, `WIDTHxHEIGHT`.
public struct Geometry: Hashable, Codable, Sendable, CustomStringConvertible {
    public static let `default` = Geometry(width: 1920, height: 1080)
    public static let bounds = (min: Geometry(width: 320, height: 200), max: Geometry(width: 8192, height: 8192))

    public let width: Int
    public let height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public init(parsing text: String) throws(DeskError) {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let w = Int(parts[0]), let h = Int(parts[1])
        else {
            throw DeskError(.invalidGeometry, "'\(text)' is not a geometry; write it as WIDTHxHEIGHT, for example 1920x1080.")
        }
        let (lo, hi) = Geometry.bounds
        guard (lo.width...hi.width).contains(w), (lo.height...hi.height).contains(h) else {
            throw DeskError(.invalidGeometry, "geometry \(text) is out of bounds; use between \(lo) and \(hi).")
        }
        self.init(width: w, height: h)
    }

    public var description: String { "\(width)x\(height)" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(parsing: text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
