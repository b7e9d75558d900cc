import DeskCore

/// One read (of the history, of a session's logs) per caller at a time, and `total` at once in
/// all: each read runs on a thread of its own until done, whether or not the caller still waits.
struct ReadGate {
    /// What is read, for the refusals: "history", "logs".
    let reading: String
    private var readers: Set<UInt32> = []
    let total = 4

    init(reading: String) {
        self.reading = reading
    }

    mutating func enter(uid: UInt32) -> DeskError? {
        if readers.contains(uid) {
            return DeskError(.limitReached, "a \(reading) request of yours is still being read; wait for it to finish.")
        }
        if readers.count >= total {
            return DeskError(.limitReached, "deskd is serving \(readers.count) \(reading) requests, its limit; try again in a few seconds.")
        }
        readers.insert(uid)
        return nil
    }

    mutating func leave(uid: UInt32) {
        readers.remove(uid)
    }
}
