import FoundationEssentials

/// The records' encoding: JSON, one message per record.
public enum FrontWire {
    /// The most a front's message may be; deskd drops a front that sends more. A token or a
    /// cookie is under a hundred bytes, counts a few hundred; a portal request's body (16 KiB)
    /// escaped as a JSON string can grow up to six times. The front refuses to send more itself.
    public static let requestLimit = 128 << 10
    /// The most one of deskd's messages may be: the metrics text and the TLS chain fit well within.
    public static let eventLimit = 1 << 20

    public static func encode<T: Encodable>(_ message: T) -> [UInt8] {
        // Encoding these types cannot fail: no floats, no custom encoders.
        (try? Array(JSONEncoder().encode(message))) ?? []
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}
