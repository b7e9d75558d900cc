import DeskCore

extension DaemonConfiguration {
    /// The server every desktop draws on: Xvnc, at `xvnc_path` (a cluster node's job runs the
    /// same one at the same path).
    var displayServer: Xvnc { Xvnc(executable: xvncPath) }

    /// The server a desktop draws on: a Wayland compositor with wayvnc where its template names
    /// one (`# compositor: sway`), else Xvnc.
    func displayServer(for template: XstartupTemplate) -> any DisplayServer {
        template.compositor.map { WaylandVNC(compositor: $0) } ?? displayServer
    }

    /// What the admin's settings ask of every desktop's server, local or on a cluster node.
    var displayServerPolicy: DisplayServerPolicy {
        DisplayServerPolicy(maxIdleSeconds: xvncMaxIdleSeconds, maxDisconnectionSeconds: xvncMaxDisconnectionSeconds,
                            // Only the server can keep its clipboard from the gateway's browsers.
                            sendsCutText: !(web.isOn && !web.clipboard.toBrowserAllowed))
    }
}
