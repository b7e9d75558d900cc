import DeskCore
import DeskLinux

/// The arguments a session's Xvnc runs with (after its path): the display, the session's own
/// cookie, password file and socket, the plan's size and depth, and what the configuration adds.
struct XvncCommandLine {
    let plan: LaunchPlan
    let display: Display
    let directory: SessionDirectory

    var arguments: [String] {
        let configuration = plan.configuration, exposure = configuration.vncExposure
        return [
            display.description,
            // X clients must show the session's cookie: without -auth, every local user could
            // open the display, read the screen and type into it.
            "-auth", directory.xauthority,
            "-nolisten", "tcp",
            "-rfbauth", directory.passwordFile,
            "-geometry", plan.geometry.description,
            "-depth", String(plan.depth),
            "-desktop", "\(plan.account.name)'s desktop (\(display))",
            "-AlwaysShared",
        ]
        + exposure.xvncArguments(unixSocket: directory.rfbSocket, port: display.rfbPort(base: exposure.portBase),
                                 tlsFiles: exposure.tlsCertificate == nil ? nil : (directory.tlsCertificate, directory.tlsKey))
        + (configuration.xvncMaxIdleSeconds.map { ["-MaxIdleTime", String($0)] } ?? [])
        // The gateway can drop cut text on its way from a browser, but Xvnc's own travels among
        // framebuffer updates: only Xvnc can keep it from the browser (and so from every viewer).
        + (configuration.web.isOn && !configuration.web.clipboard.toBrowserAllowed ? ["-SendCutText=0"] : [])
        + (configuration.xvncMaxDisconnectionSeconds.map { ["-MaxDisconnectionTime", String($0)] } ?? [])
    }
}
