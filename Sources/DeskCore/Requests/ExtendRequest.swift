/// `extend`: a cluster desktop's time limit made longer, by `seconds`, where the site allows.
public struct ExtendRequest: ControlVerb {
    public static let command = Command.extend
    public var display: Display
    public var seconds: Int

    public init(display: Display, seconds: Int) {
        self.display = display
        self.seconds = seconds
    }

    public init(wire: Request) throws(DeskError) {
        let display = try wire.requiredDisplay()
        guard let seconds = wire.extendSeconds, (60...SlurmTime.maxSeconds).contains(seconds) else {
            throw DeskError(.invalidDuration, "extend needs 'extendSeconds', at least 60 (Slurm counts in minutes); for example: deskctl extend \(display) --by 1h.")
        }
        self.init(display: display, seconds: seconds)
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
        wire.extendSeconds = seconds
    }
}
