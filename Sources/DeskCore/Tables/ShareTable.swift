import FoundationEssentials

/// `deskctl url --shares` for people: one line per share of a desktop.
public enum ShareTable {
    public static func render(_ shares: [LinkShare], now: Date = Date()) -> String {
        let rows = shares.map { share in
            let state = share.expiresAt.map { "unused, " + left(until: $0, now: now) } ?? "used"
            return [share.share, share.viewOnly ? "view-only" : "full", share.viewers?.joined(separator: ",") ?? "anyone with the link",
                    TerminalText.escape(share.issuedBy), state, "\(share.browsers)"]
        }
        return SessionTable.align([["SHARE", "MODE", "FOR", "BY", "LINK", "BROWSERS"]] + rows)
    }

    /// "expires in 9m" (minutes rounded up; seconds under a minute).
    static func left(until date: Date, now: Date) -> String {
        let seconds = max(0, Int(date.timeIntervalSince(now).rounded(.up)))
        return seconds < 60 ? "expires in \(seconds)s" : "expires in \((seconds + 59) / 60)m"
    }
}
