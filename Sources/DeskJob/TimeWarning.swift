import Glibc

/// What the user sees when Slurm's warning signal comes (sbatch --signal=B:USR1@W, W being the
/// spec's warnSeconds): a window on the desktop itself, since nothing else reaches them there.
enum TimeWarning {
    /// The program that shows it (Debian's x11-utils).
    static let program = "xmessage"

    /// The sentence, with the end as a rough count of minutes and a local clock time. Slurm
    /// checks time limits about every 30 s, so the signal comes up to that much off: "about".
    static func text(warnSeconds: Int, now: time_t = time(nil)) -> String {
        let minutes = max(1, (warnSeconds + 30) / 60)
        var end = now + time_t(warnSeconds)
        var local = tm()
        let clock = localtime_r(&end, &local) == nil ? nil : "\(twoDigits(local.tm_hour)):\(twoDigits(local.tm_min))"
        let when = clock.map { " (at \($0))" } ?? ""
        return "This desktop's time is nearly up: its Slurm job ends in about \(minutes) minute\(minutes == 1 ? "" : "s")\(when). Save your work now."
    }

    private static func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// xmessage's arguments for `text`, centred on the screen.
    static func arguments(program path: String, text: String) -> [String] {
        [path, "-center", "-title", "deskd: time nearly up", text]
    }
}
