import DeskLinux
import Glibc

/// The process behind one desktop's PAM login, as the daemon drives it.
public protocol LoginProcess: Sendable {
    var pid: pid_t { get }
    func awaitStart(until deadline: ContinuousClock.Instant) -> SessionHelper.Start
    func startDesktop(until deadline: ContinuousClock.Instant) -> Result<pid_t, OSError>
    func awaitDesktop(until deadline: ContinuousClock.Instant, settled: () -> Bool) -> SessionHelper.DesktopStart
}

extension SessionHelper: LoginProcess {}
