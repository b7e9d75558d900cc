import Synchronization

/// Things under way at once, with a ceiling: a front's requests, deskd's logins to desktops.
final class InFlightLimit: Sendable {
    let limit: Int
    private let taken = Atomic<Int>(0)

    init(_ limit: Int) {
        self.limit = limit
    }

    /// One more, unless `limit` are under way already.
    func take() -> Bool {
        guard taken.add(1, ordering: .relaxed).newValue <= limit else {
            taken.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func give() {
        taken.subtract(1, ordering: .relaxed)
    }
}
