import DeskCore
import DeskLinux

/// Everything a start has decided before it touches the host: whose desktop, which template,
/// at what size, on which display if one was named, under which configuration. What
/// `StartAdmission` makes of a request, and what `SessionBringUp` carries out.
struct LaunchPlan: Sendable {
    var account: UserAccount
    var template: XstartupTemplate
    var geometry: Geometry
    var depth: Int
    /// The display the request named; nil: the lowest usable one in the range.
    var display: Display?
    /// sessions.user_xstartup applies: ~/.vnc/xstartup runs instead of the template where it exists.
    var userXstartup: Bool
    /// A cluster desktop: its Slurm options, the user's over the site's defaults; nil: on this host.
    var slurm: SlurmOptions?
    /// The configuration as it was at admission: a reload during the start changes nothing of it.
    var configuration: DaemonConfiguration

    /// What the desktop draws on: Xvnc, or the compositor with wayvnc its template names.
    var server: any DisplayServer { configuration.displayServer(for: template) }
}
