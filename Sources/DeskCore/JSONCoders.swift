import FoundationEssentials

extension JSONEncoder {
    /// The encoder for everything deskd writes: ISO 8601 dates, sorted keys for stable diffs.
    public static var desk: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(InternetTime.format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The control socket's encoder: the same values, keys in no particular order. Sorting
    /// the keys of 200 sessions was a fifth of what a `list --all` cost deskd, and no person
    /// reads this side of the socket (deskctl --json prints with `desk`).
    public static var deskWire: JSONEncoder {
        let encoder = desk
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }
}

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
