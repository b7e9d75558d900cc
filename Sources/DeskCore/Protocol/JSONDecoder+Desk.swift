import FoundationEssentials

extension JSONDecoder {
    public static var desk: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = InternetTime.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not an ISO 8601 time such as 2026-11-22T07:31:02Z")
            }
            return date
        }
        return decoder
    }
}
