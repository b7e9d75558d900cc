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
