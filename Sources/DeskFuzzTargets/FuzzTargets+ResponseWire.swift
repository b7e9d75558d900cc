import DeskCore
import FoundationEssentials

extension FuzzTargets {
    /// deskctl's reading of deskd's replies (`ResponseWire`, sessions by hand) against
    /// Foundation's: whatever both read, they read alike; and what ResponseWire writes of a reply
    /// it read, Foundation reads back as ResponseWire does. A difference would be a session
    /// shown other than deskd sent it.
    static let responseWire: Target = { bytes in
        let fast = try? ResponseWire.decode(bytes)
        if let fast, let foundation = try? JSONDecoder.desk.decode(Response.self, from: Data(bytes)) {
            precondition(fast == foundation, "ResponseWire and Foundation read a reply differently")
        }
        if let fast {
            guard let again = try? ResponseWire.encode(fast) else { fatalError("a reply ResponseWire read does not encode") }
            let back = try? JSONDecoder.desk.decode(Response.self, from: Data(again))
            let mine = try? ResponseWire.decode(again)
            precondition(back != nil && back == mine, "what ResponseWire wrote, Foundation reads otherwise")
        }
    }
}
