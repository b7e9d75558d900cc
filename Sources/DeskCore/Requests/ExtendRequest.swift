/// `extend`: a cluster desktop's time limit made longer, by `seconds`, where the site allows.
public struct ExtendRequest: ControlVerb {
    public static let command = Command.extend
    public var display: Display
    public var seconds: Int

    /// `seconds` is rounded up to whole minutes, as Slurm counts.
    public init(display: Display, seconds: Int) {
        self.display = display
        self.seconds = seconds > Int.max - 59 ? seconds : (seconds + 59) / 60 * 60
    }

    public init(wire: Request) throws(DeskError) {
        let display = try wire.requiredDisplay()
        guard let seconds = wire.extendSeconds, (60...SlurmTime.maxSeconds).contains(seconds) else {
            throw DeskError(.invalidDuration, "extend needs 'extendSeconds', at least 60 (Slurm counts in minutes); for example: deskctl extend \(display) --by 1h.")
        }
        // Slurm counts a time limit in whole minutes and rounds an increment up: so does deskd,
        // or each odd second would be granted a minute and counted a second.
        self.init(display: display, seconds: (seconds + 59) / 60 * 60)
    }

    public func fill(_ wire: inout Request) {
        wire.display = display
        wire.extendSeconds = seconds
    }
}
