/// Decides which display a start lands on. Pure: the occupancy comes from outside.
public struct DisplayAllocator: Sendable {
    public let range: ClosedRange<Int>

    public init(range: ClosedRange<Int> = Display.supportedRange) {
        self.range = range
    }

    /// The requested display if it is usable, otherwise the lowest usable one in range.
    public func choose(requested: Display?, skipping tried: Set<Display> = [], occupancy: (Display) -> DisplayOccupancy) throws(DeskError) -> Display {
        if let requested {
            guard range.contains(requested.number) else {
                throw DeskError(.invalidDisplay, "display \(requested) is out of range; use :\(range.lowerBound) to :\(range.upperBound).")
            }
            let state = occupancy(requested)
            guard state.isUsable, !tried.contains(requested) else {
                throw DeskError(.displayBusy, "display \(requested) is in use: \(state.reason); pick another or leave out --display.")
            }
            return requested
        }
        for number in range {
            let display = Display(number)
            if !tried.contains(display), occupancy(display).isUsable { return display }
        }
        throw DeskError(.noFreeDisplay, "every display from :\(range.lowerBound) to :\(range.upperBound) is in use; kill an idle session (deskctl reap) and try again.")
    }
}
