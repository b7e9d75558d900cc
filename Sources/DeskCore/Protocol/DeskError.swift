/// The one error type deskd speaks: a stable code for scripts, a sentence for people and,
/// when one is known, its cause.
///
/// The code travels on the wire as its raw value; the message says what was wrong and what to
/// do; the cause (a failed system call, a PAM result, a place in a file) is for logs and
/// `deskctl --json`, and never replaces the sentence.
public struct DeskError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Codable, Sendable, CaseIterable {
        case badRequest = "bad-request"
        case unsupportedVersion = "unsupported-version"
        case requestTooLarge = "request-too-large"
        case unknownUser = "unknown-user"
        case loginRefused = "login-refused"
        case userNotAllowed = "user-not-allowed"
        case permissionDenied = "permission-denied"
        case invalidGeometry = "invalid-geometry"
        case invalidDepth = "invalid-depth"
        case invalidDesktop = "invalid-desktop"
        case invalidDisplay = "invalid-display"
        case displayBusy = "display-busy"
        case noFreeDisplay = "no-free-display"
        case noSuchSession = "no-such-session"
        case xvncMissing = "xvnc-missing"
        case xvncExited = "xvnc-exited"
        case desktopExited = "desktop-exited"
        case startTimedOut = "start-timed-out"
        case limitReached = "limit-reached"
        /// A start would leave less memory available than `limits.memory_reserve`.
        case memoryLow = "memory-low"
        case invalidDuration = "invalid-duration"
        /// `deskctl url` on a host whose browser gateway is off.
        case gatewayOff = "gateway-off"
        /// The gateway's /exchange: a link token that is unknown, used, expired or malformed
        /// (one answer for all, so a guess learns nothing).
        case linkRefused = "link-refused"
        /// `start --slurm` on a deskd that submits no desktops to Slurm ([slurm] listen unset).
        case slurmOff = "slurm-off"
        /// Slurm would not take the desktop's job (sbatch's reason in the sentence).
        case slurmRefused = "slurm-refused"
        case internalError = "internal-error"
    }

    public var code: Code
    public var message: String
    /// What lay under the error, when deskd knows it.
    public var cause: Cause?

    public init(_ code: Code, _ message: String) {
        self.init(code, message, cause: nil)
    }

    public init(_ code: Code, _ message: String, cause: Cause?) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { message }
}
