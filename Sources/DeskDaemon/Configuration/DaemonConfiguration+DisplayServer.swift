import DeskCore

extension DaemonConfiguration {
    /// The server a desktop draws on: its template's, with Xvnc at `xvnc_path` (a cluster
    /// node's job runs the same one at the same path).
    func displayServer(for template: XstartupTemplate) -> any DisplayServer {
        template.displayServer(xvnc: xvncPath)
    }

    /// What the admin's settings ask of every desktop's server, local or on a cluster node.
    var displayServerPolicy: DisplayServerPolicy {
        DisplayServerPolicy(maxIdleSeconds: xvncMaxIdleSeconds, maxDisconnectionSeconds: xvncMaxDisconnectionSeconds,
                            // Only the server can keep its clipboard from the gateway's browsers.
                            sendsCutText: !(web.isOn && !web.clipboard.toBrowserAllowed))
    }
}
